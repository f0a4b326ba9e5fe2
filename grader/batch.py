"""Grading many submissions: one report per submission, a summary, isolation between them.

Each submission is graded in a pool worker process of its own choosing, which runs the
submission in its own sandboxed child; a crash, hang or memory blow-up of one submission is
confined to its child and is reported for that submission only.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from grader.sandbox.limits import DEFAULT_LIMITS, Limits

SUFFIXES = (".py", ".ipynb")


def find_submissions(paths: Iterable[str]) -> list[Path]:
    """Files as given, folders searched recursively, globs expanded; sorted, without duplicates."""
    found: dict[Path, None] = {}
    for raw in paths:
        matches = [Path(p) for p in sorted(glob.glob(raw, recursive=True))] or [Path(raw)]
        for path in matches:
            if path.is_dir():
                for child in sorted(path.rglob("*")):
                    if (child.suffix in SUFFIXES and child.is_file()
                            and not any(part.startswith(".") for part in child.parts)):
                        found[child] = None
            elif path.is_file():
                found[path] = None
    return list(found)


def report_name(path: Path, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(path.parts[-3:])).strip("_") or "submission"
    name, counter = base, 1
    while name in taken:
        counter += 1
        name = f"{base}-{counter}"
    taken.add(name)
    return name + ".json"


def _grade_one(path: str, assignment: str, seed: int, limits: Limits) -> dict[str, Any]:
    from grader.api import grade

    return grade(path, assignment=assignment, seed=seed, limits=limits)


def run_batch(submissions: Sequence[Path], assignment: str, out_dir: Path, *, jobs: int = 1,
              seed: int = 0, limits: Limits = DEFAULT_LIMITS,
              progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    from grader.cli import write_atomically

    out_dir.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    names = {path: report_name(path, taken) for path in submissions}
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(_grade_one, str(p), assignment, seed, limits): p
                   for p in submissions}
        for done, future in enumerate(as_completed(futures), 1):
            path = futures[future]
            try:
                report = future.result()
            except Exception as exc:  # the grader itself failed for this one; say so, go on
                from grader.api import error_report
                from grader.model import GraderError

                report = error_report(assignment, [GraderError("crashed", f"grader error: {exc}")],
                                       {"submission": path.name})
            write_atomically(out_dir / names[path], json.dumps(report, indent=2) + "\n")
            rows.append({
                "submission": str(path),
                "report": names[path],
                "status": report["status"],
                "score": report["score"],
                "max_score": report["max_score"],
                "misconceptions": [m["id"] for m in report["misconceptions"]],
                "errors": [e["kind"] for e in report["errors"]],
            })
            if progress:
                progress(f"[{done}/{len(submissions)}] {path}: {report['score']:g}/"
                         f"{report['max_score']:g} {' '.join(rows[-1]['misconceptions'])}")
    rows.sort(key=lambda r: r["submission"])
    write_atomically(out_dir / "summary.json", json.dumps(rows, indent=2) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["submission", "status", "score", "max_score", "misconceptions", "errors"])
    for row in rows:
        writer.writerow([row["submission"], row["status"], row["score"], row["max_score"],
                         " ".join(row["misconceptions"]), " ".join(row["errors"])])
    write_atomically(out_dir / "summary.csv", buffer.getvalue())
    return rows
