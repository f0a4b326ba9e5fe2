"""attention-grader: grade student implementations of attention and name their misconceptions.

Public API: ``grade(path, assignment=None, seed=0)`` returns the report as a dict.
Imports are lazy so that the command line starts the sandboxed child before NumPy loads here.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "grade"]


def __getattr__(name: str) -> Any:
    if name == "grade":
        from grader.api import grade

        return grade
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
