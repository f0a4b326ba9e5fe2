"""Speed of `attention-grader grade`, as ratios against `python -c "import numpy"` in the same run.

Targets: a .py grade <= 2.5x the numpy import (issue "diagnosis in depth"; 3x before), a
notebook <= 4x, and the whole diagnosis of a wrong submission (all variants on all probes)
under 50 ms. The grader's modules are byte-compiled first, as ``pip install`` does (an editable
install under PYTHONDONTWRITEBYTECODE would compile them on every run), and the floor and the
gradings are timed in turns, so that a machine's changing load weighs on both alike. A course's interface
(issue "course interfaces") may add at most 5 ms per submission for a NumPy course: measured
in-process, the conversions of every probe's arguments and results plus the choice of the
probes the interface can express, against the built-in assignment.
Run: python bench/bench_grade.py [--repeat N]
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY_SUBMISSION = ROOT / "tests" / "submissions" / "attention" / "combo_dk_inverted.py"
CORRECT = ROOT / "tests" / "submissions" / "attention" / "correct_matmul.py"


def walls(commands: list[list[str]], repeat: int) -> list[float]:
    """The median wall time of each command, run in turns."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(repeat):
        for command, samples in zip(commands, times):
            started = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            samples.append(time.perf_counter() - started)
    return [statistics.median(samples) for samples in times]


def notebook_of(source: Path, folder: Path) -> Path:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# Attention"},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": "%matplotlib inline\nimport numpy as np"},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": source.read_text()}]
    path = folder / "submission.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    return path


def diagnosis_seconds(path: Path, repeat: int) -> tuple[float, list[str]]:
    from grader import load, sandbox
    from grader.core.assignments import get
    from grader.core.diagnose import diagnose

    spec = get("attention")
    probes = spec.probes()
    _, outcomes = sandbox.run(load.load(path), lambda info: (spec.function, probes))
    times, ids = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        ids = [f.id for f in diagnose(spec, probes, outcomes)]
        times.append(time.perf_counter() - started)
    return statistics.median(times), ids


COURSE = """\
id = "bench-course"
task = "attention"
function = "attend"
signature = "attend(keys, queries, values, blocked=None)"
[interface]
parameters = ["K", "Q", "V", "mask"]
mask = "block"
returns = "weights-output"
batch = "one"
"""


def adapter_overhead_seconds(repeat: int) -> float:
    """Per submission: (probes + calls through a NumPy course's interface) - (the built-in's)."""
    import numpy as np

    from grader import registry
    from grader.core.assignments import Assignment, get
    from grader.sandbox import interface
    from grader.sandbox.returns import check_binding, to_arrays
    from reference import scaled_dot_product_attention as sdpa

    def course_function(keys, queries, values, blocked=None):
        output, weights = sdpa(queries, keys, values, None if blocked is None else ~blocked)
        return weights, output

    def plain(Q, K, V, mask=None):
        return sdpa(Q, K, V, mask)

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "assignment.toml").write_text(COURSE)
        info = registry.get(folder)
        course = Assignment(info, get("attention").task)
        builtin = get("attention")

        def run(assignment: Assignment, function: object) -> None:
            calling = assignment.calling()
            invoke = interface.invoker(function, calling.get("interface"), calling.get("task"),
                                       to_arrays, check_binding)
            for probe in assignment.probes():
                invoke([np.array(a) if isinstance(a, np.ndarray) else a for a in probe.args])

        times = {}
        for name, assignment, function in (("builtin", builtin, plain),
                                           ("course", course, course_function)):
            run(assignment, function)  # warm
            samples = []
            for _ in range(max(repeat, 5)):
                started = time.perf_counter()
                run(assignment, function)
                samples.append(time.perf_counter() - started)
            times[name] = statistics.median(samples)
    return times["course"] - times["builtin"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "grader", quiet=1)
    compileall.compile_dir(ROOT / "reference", quiet=1)
    cli = [sys.executable, "-m", "grader", "grade"]
    with tempfile.TemporaryDirectory() as folder:
        notebook = notebook_of(PY_SUBMISSION, Path(folder))
        floor, grade_py, grade_correct, grade_nb = walls(
            [[sys.executable, "-c", "import numpy"], [*cli, str(PY_SUBMISSION)],
             [*cli, str(CORRECT)], [*cli, str(notebook)]], args.repeat)
    diagnosis, ids = diagnosis_seconds(PY_SUBMISSION, args.repeat)
    rows = [
        ("python -c 'import numpy' (floor)", floor, None, None),
        ("grade .py (two misconceptions)", grade_py, grade_py / floor, 2.5),
        ("grade .py (correct)", grade_correct, grade_correct / floor, 2.5),
        ("grade .ipynb (two misconceptions)", grade_nb, grade_nb / floor, 4.0),
    ]
    failed = False
    for name, seconds, ratio, target in rows:
        verdict = ""
        if ratio is not None:
            ok = ratio <= target
            failed |= not ok
            verdict = f"{ratio:5.2f}x floor (target <= {target:g}x) {'ok' if ok else 'SLOW'}"
        print(f"{name:38} {seconds * 1000:8.1f} ms  {verdict}")
    ok = diagnosis < 0.050
    failed |= not ok
    print(f"{'diagnosis, all variants on all probes':38} {diagnosis * 1000:8.1f} ms  "
          f"(target < 50 ms) {'ok' if ok else 'SLOW'}  -> {ids}")
    overhead = adapter_overhead_seconds(args.repeat)
    ok = overhead <= 0.005
    failed |= not ok
    print(f"{'course interface (NumPy), per submission':38} {overhead * 1000:8.2f} ms  "
          f"(target <= 5 ms beyond the built-in) {'ok' if ok else 'SLOW'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
