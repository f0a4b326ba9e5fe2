"""Shared helpers: grade through the public API and check every report against the schema."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from grader import grade
from grader.core.report import validate

HERE = Path(__file__).parent
SUBMISSIONS = HERE / "submissions"


FRAMEWORK_MODULE = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax"}


def needs_framework(assignment: str) -> None:
    """Skip the test when the assignment's course hands in arrays of a framework not here."""
    from grader import registry

    module = FRAMEWORK_MODULE.get(registry.get(assignment).interface.arrays)
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed here")


def declared_error(path: Path) -> str | None:
    """The error kind a fixture is written to get (its ``# error: KIND`` line), if any."""
    for line in path.read_text().splitlines()[1:4]:
        if line.startswith("# error:"):
            return line.split(":", 1)[1].strip()
    return None


def expected_ids(path: Path) -> list[str]:
    """The misconceptions a fixture is written to show, from its `# expect:` first line."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect:"), path
    return sorted(first.split(":", 1)[1].split())


@pytest.fixture
def grade_source(tmp_path: Path):
    """Write source text to a file and grade it; the report is schema-checked."""

    def run(source: str, name: str = "submission.py", **options: Any) -> dict[str, Any]:
        path = tmp_path / name
        path.write_text(source)
        report = grade(path, **options)
        validate(report)
        return report

    return run


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True,
                          text=True, timeout=timeout)


def notebook(*cells: str | tuple[str, str], nbformat: int = 4) -> str:
    """A minimal notebook JSON; a cell is source text (code) or (cell_type, source)."""
    made = []
    for cell in cells:
        kind, source = ("code", cell) if isinstance(cell, str) else cell
        entry: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            entry.update(execution_count=None, outputs=[])
        made.append(entry)
    return json.dumps({"cells": made, "metadata": {}, "nbformat": nbformat,
                       "nbformat_minor": 5})
