"""Batch grading of a PyTorch course against `python -c "import torch"`, measured in the same run.

Target (issue "real course code as found", item 9): a class of torch submissions grades at most
0.1x the `import torch` floor per submission, the fork server importing torch once (before, every
submission paid torch's import). The class: the CS231n preset's correct and buggy fixtures, in
turn.

Run: python bench/bench_torch_batch.py [--submissions 50] [--jobs 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRESET = "cs231n-multi-head-attention"
FIXTURES = sorted((ROOT / "tests" / "submissions" / "presets" / PRESET).glob("*.py"))


def import_seconds(module: str, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(count: int, jobs: int) -> tuple[float, int]:
    from grader.batch import discover, run_batch

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "class"
        for index in range(count):
            student = folder / f"student{index:03d}"
            student.mkdir(parents=True)
            fixture = FIXTURES[index % len(FIXTURES)]
            (student / "attention.py").write_text(fixture.read_text())
        started = time.perf_counter()
        result = run_batch(discover([str(folder)]), PRESET, Path(scratch) / "out", jobs=jobs,
                           resume=False)
        seconds = time.perf_counter() - started
        errors = sum(1 for row in result.rows if "missing-dependency" in row["errors"])
    return seconds, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    options = parser.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("torch is not installed: nothing to measure")
    floor = import_seconds("torch")
    seconds, errors = run(options.submissions, options.jobs)
    each = seconds / options.submissions
    ratio = each / floor
    print(f"floor: python -c 'import torch' = {floor * 1000:.0f} ms; {options.jobs} jobs")
    print(f"  {options.submissions} torch submissions: {seconds:.2f} s, {each * 1000:.1f} ms each "
          f"= {ratio:.2f}x floor (target 0.1x); {errors} missing torch  "
          f"[{'ok' if ratio <= 0.1 and not errors else 'OVER TARGET'}]")


if __name__ == "__main__":
    main()
