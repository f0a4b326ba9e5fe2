"""attention-grader: grade student implementations of attention and name their misconceptions.

Public API: ``grade(path, assignment=None, seed=0)`` returns the report as a dict;
``check(function)`` is the self-check inside a student's notebook (see ``grader.notebook``).
Imports are lazy so that the command line starts the sandboxed child before NumPy loads here.
"""

from __future__ import annotations

from typing import Any

from grader.version import __version__

__all__ = ["__version__", "check", "grade", "probe_inputs", "reproduce"]


def __getattr__(name: str) -> Any:
    if name == "grade":
        from grader.pipeline import grade

        return grade
    if name == "probe_inputs":  # a report's reproducing call fetches a test input by name
        from grader.core.assignments import probe_inputs

        return probe_inputs
    if name == "check":
        from grader.notebook import check

        return check
    if name == "reproduce":  # a course's reproducing call goes through its interface
        from grader.notebook import reproduce

        return reproduce
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
