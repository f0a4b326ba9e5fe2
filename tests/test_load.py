"""Verdicts do not depend on the machine's load: the fixtures graded on an oversubscribed
machine (several busy processes per core) get exactly the reports they get on an idle one.

Time limits that decide a verdict count the submission's own CPU time; the wall clock is only a
backstop, and a call it stops is tried again before anything is reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from grader import grade, sandbox
from grader.config import Limits

from .conftest import SUBMISSIONS, notebook

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

#: every softmax fixture (three came back as errors on a loaded machine), and a few of the others
FIXTURES = [*sorted((SUBMISSIONS / "softmax").glob("*.py")),
            *(SUBMISSIONS / "attention" / f"{name}.py" for name in
              ("correct_matmul", "correct_loops", "combo_dk_inverted", "mask_inverted")),
            *(SUBMISSIONS / "multi_head_attention" / f"{name}.py" for name in
              ("correct_head_loop", "combo_dmodel_no_wo"))]
BUSY_PER_CORE = 4
#: tight budgets, so that a limit the load could trip would show here: loading takes a tenth of
#: this CPU time, a call a hundredth
TIGHT = Limits(import_seconds=1.0, call_seconds=0.25, total_seconds=6)


def _verdict(report: dict[str, Any]) -> tuple[Any, ...]:
    return (report["status"], report["score"], sorted(m["id"] for m in report["misconceptions"]),
            sorted(e["kind"] for e in report["errors"]))


def _grade_all(tmp_path: Path) -> dict[str, tuple[Any, ...]]:
    verdicts = {}
    for path in FIXTURES:
        verdicts[f"{path.parent.name}/{path.name}"] = _verdict(
            grade(path, assignment=path.parent.name, limits=TIGHT))
    book = tmp_path / "attention.ipynb"
    book.write_text(notebook("import numpy as np",
                             (SUBMISSIONS / "attention" / "correct_matmul.py").read_text()))
    verdicts["notebook"] = _verdict(grade(book, assignment="attention", limits=TIGHT))
    return verdicts


@pytest.mark.parametrize("fork_server", [False, True], ids=["fresh-interpreter", "fork-server"])
def test_verdicts_on_an_oversubscribed_machine_equal_those_on_an_idle_one(
        tmp_path: Path, fork_server: bool) -> None:
    sandbox.use_fork_server(fork_server)
    try:
        idle = _grade_all(tmp_path)
        cores = len(os.sched_getaffinity(0))
        busy = [subprocess.Popen([sys.executable, "-c",
                                  "import time\nend = time.monotonic() + 300\n"
                                  "while time.monotonic() < end:\n    pass\n"])
                for _ in range(BUSY_PER_CORE * cores)]
        try:
            loaded = _grade_all(tmp_path)
        finally:
            for process in busy:
                process.kill()
                process.wait()
    finally:
        sandbox.use_fork_server(False)
    different = {name: (idle[name], loaded[name]) for name in idle if idle[name] != loaded[name]}
    assert different == {}
