"""How long the text reports of every fixture are, on the public probes and a hidden seed
(issue 34, item 4): lines per report (median, 90th percentile, max), words per mistake in the
first part, repeated lines and placeholders, against the budget in ``grader.render.length``.

    python bench/report_lengths.py                         # grade every fixture in-process
    python bench/report_lengths.py --snapshot before.json  # the reports of snapshot_reports.py

Exit status 1 when a report breaks the budget or the median is over it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "submissions"
SEEDS = (0, 3)


def graded_fixtures() -> dict[str, dict[str, Any]]:
    """Every fixture's report at each seed, graded in this process (fixtures are our own code);
    a fixture whose framework is not installed here is left out."""
    sys.path.insert(0, str(ROOT))
    from grader.notebook import grade_file
    from tests.conftest import gradable

    reports = {}
    for path in sorted(FIXTURES.rglob("*.py")):
        if not gradable(path):
            continue
        for seed in SEEDS:
            reports[f"{path.relative_to(FIXTURES)}@{seed}"] = grade_file(
                path, path.parent.name, seed=seed)
    return reports


def summarise(reports: dict[str, dict[str, Any]], dump: Path | None = None) -> int:
    from grader.render import text
    from grader.render.length import MEDIAN_LINES, measure, over_budget

    by_seed: dict[str, list[int]] = {}
    words: list[int] = []
    broken = 0
    for key, report in sorted(reports.items()):
        lengths = measure(report)
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            (dump / (key.replace("/", "__") + ".txt")).write_text(text.render(report))
        by_seed.setdefault(key.rsplit("@", 1)[1], []).append(lengths.lines)
        words += lengths.words
        for problem in over_budget(lengths):
            broken += 1
            print(f"{key}: {problem}")
    status = 1 if broken else 0
    for seed, lines in sorted(by_seed.items()):
        lines.sort()
        median = statistics.median(lines)
        status |= median > MEDIAN_LINES
        print(f"seed {seed}: {len(lines)} text reports, lines median {median:g}, 90th percentile "
              f"{lines[int(0.9 * (len(lines) - 1))]}, max {lines[-1]}")
    if words:
        words.sort()
        print(f"first part: {len(words)} mistakes, words each median "
              f"{statistics.median(words):g}, max {words[-1]}")
    print(f"{broken} budget breaks")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path,
                        help="measure the reports of this bench/snapshot_reports.py file")
    parser.add_argument("--dump", type=Path, help="write each text report into this folder")
    arguments = parser.parse_args()
    reports = (json.loads(arguments.snapshot.read_text()) if arguments.snapshot
               else graded_fixtures())
    return summarise(reports, arguments.dump)


if __name__ == "__main__":
    sys.exit(main())
