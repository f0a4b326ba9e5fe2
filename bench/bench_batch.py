"""Throughput of `attention-grader batch` on a synthetic class, against `python -c "import numpy"`.

Targets, on this machine's cores: per-submission wall time (total / submissions) at most 0.3x
the numpy import measured in the same run (issue #21: every isolation layer included; #5 asked
0.5x), and peak memory per worker at most 150 MB.
The class mixes correct and buggy .py files, notebooks, starter stubs and a few submissions that
hang (graded with `--timeout`, default here 0.5 s per call, as an instructor would set it).

Run: python bench/bench_batch.py [--submissions 200] [--jobs 2] [--scaling]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIXTURES = sorted((ROOT / "tests" / "submissions" / "attention").glob("*.py"))
STUB = ROOT / "assignments" / "attention" / "starter" / "attention.ipynb"
TARGET = 0.3
HANGS = "def scaled_dot_product_attention(Q, K, V, mask=None):\n    while True:\n        pass\n"


def numpy_import_seconds(repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def as_notebook(source: str) -> str:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# Attention"},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": "import numpy as np"},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": source}]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def make_class(folder: Path, count: int, hanging: int) -> None:
    """``count`` students, one folder each: .py files and notebooks in turn, some stubs, and
    ``hanging`` submissions that never return."""
    for index in range(count):
        student = folder / f"student{index:04d}"
        student.mkdir(parents=True)
        if index < hanging:
            (student / "attention.py").write_text(HANGS)
            continue
        source = FIXTURES[index % len(FIXTURES)].read_text()
        if index % 10 == 9:
            (student / "attention.ipynb").write_text(STUB.read_text())
        elif index % 2:
            (student / "attention.ipynb").write_text(as_notebook(source))
        else:
            (student / "attention.py").write_text(source)


def run(count: int, jobs: int, timeout: float, hanging: int) -> dict[str, float]:
    from grader.batch import discover, run_batch
    from grader.config import Limits

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "class"
        make_class(folder, count, hanging)
        entries = discover([str(folder)])
        started = time.perf_counter()
        result = run_batch(entries, "attention", Path(scratch) / "out", jobs=jobs,
                           limits=Limits(call_seconds=timeout), resume=False)
        seconds = time.perf_counter() - started
        rows = result.rows
    return {
        "submissions": len(rows),
        "seconds": seconds,
        "per_submission": seconds / len(rows),
        "worker_peak_rss_mb": result.worker_peak_rss_mb,
        "timeouts": sum("timeout" in r["errors"] for r in rows),
        "full_marks": sum(r["score"] == r["max_score"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=0.5, help="seconds per call")
    parser.add_argument("--hanging", type=int, default=3)
    parser.add_argument("--scaling", action="store_true", help="also run 10, 100 and 1000")
    arguments = parser.parse_args()

    floor = numpy_import_seconds()
    print(f"floor: python -c 'import numpy' = {1000 * floor:.0f} ms; {arguments.jobs} jobs")
    sizes = [arguments.submissions] + ([10, 100, 1000] if arguments.scaling else [])
    for size in sizes:
        hanging = min(arguments.hanging, max(0, size // 50))
        stats = run(size, arguments.jobs, arguments.timeout, hanging)
        ratio = stats["per_submission"] / floor
        verdict = "ok" if ratio <= TARGET and stats["worker_peak_rss_mb"] <= 150 else "OVER TARGET"
        print(f"{stats['submissions']:5d} submissions ({hanging} hanging): "
              f"{stats['seconds']:.2f} s, {1000 * stats['per_submission']:.1f} ms each = "
              f"{ratio:.2f}x floor (target {TARGET}x), {stats['submissions'] / stats['seconds']:.1f}"
              f"/s; worker peak {stats['worker_peak_rss_mb']:.0f} MB (target 150); "
              f"{stats['timeouts']} timed out, {stats['full_marks']} full marks  [{verdict}]")
        if hanging:
            # a hanging submission is given up after two calls that run out of time: it burns
            # two call limits of CPU, whatever else the grader does
            cores = min(arguments.jobs, os.cpu_count() or 1)
            share = 2 * arguments.timeout * hanging / cores / stats["submissions"]
            print(f"      of which the {hanging} hanging submissions' 2 call limits each: at "
                  f"least {1000 * share:.1f} ms a submission = {share / floor:.2f}x floor")


if __name__ == "__main__":
    main()
