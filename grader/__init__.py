"""attention-grader: grade student implementations of attention and name their misconceptions.

Public API: ``grade(path, assignment=None, seed=0)`` returns the report as a dict.
"""

__version__ = "0.1.0"

from grader.api import grade  # noqa: E402

__all__ = ["__version__", "grade"]
