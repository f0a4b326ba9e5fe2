"""What every platform's result is made of, worked out once: the fraction of the points, the
problems a score is split into (the rubric's checks, or the parts of a multi-part assignment),
and what makes a submission one that could not be graded at all.

Each platform (``grader.platforms``) writes these in its own documented shape; none works them
out for itself, so all give the same fraction as the JSON report.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, NamedTuple

from grader import registry

#: errors that stop grading before the submission's function could run on any probe, or that
#: are the grader's own failing: a platform that can decline to grade (PrairieLearn's
#: ``gradable: false``) charges the student no attempt for them
NOT_GRADABLE = frozenset({"syntax-error", "invalid-notebook", "missing-function",
                          "wrong-signature", "forbidden-import", "isolation-unavailable",
                          "missing-dependency", "crashed"})


class Problem(NamedTuple):
    """One named share of the points, as a platform that scores by problem is told it."""

    name: str
    points: float
    max_points: float


def _decimal(value: float) -> Fraction:
    """A score as the decimal it is written as (3.7 is 37/10, not the binary float's value)."""
    return Fraction(repr(float(value)))


def exact_fraction(report: dict[str, Any]) -> Fraction:
    """``score / max_score`` as an exact fraction in [0, 1] (0 when nothing can be earned)."""
    total = _decimal(report["max_score"])
    if total <= 0:
        return Fraction(0)
    return min(Fraction(1), max(Fraction(0), _decimal(report["score"]) / total))


def fraction(report: dict[str, Any]) -> float:
    """``score / max_score`` in [0, 1]: the number every platform's result carries."""
    return float(exact_fraction(report))


def rubric_problems(assignment: str) -> list[Problem]:
    """The rubric's checks of ``assignment`` with their points, none earned (the problems to
    define on a platform that scores by problem)."""
    if not registry.exists(assignment):
        return []
    return [Problem(str(item["id"]), 0.0, float(item["points"]))
            for item in registry.rubric(assignment)["checks"]]


def problems(report: dict[str, Any]) -> list[Problem]:
    """How the report's score splits: one problem per part of a multi-part assignment; else
    one per check; a report without checks (it could not be graded) scores 0 on each of the
    rubric's checks; an assignment without a rubric, one problem for the whole score."""
    if report.get("parts"):
        return [Problem(str(part["assignment"]), float(part["score"]),
                        float(part["max_score"])) for part in report["parts"]]
    if report["checks"]:
        return [Problem(str(c["id"]), float(c["points"]), float(c["max_points"]))
                for c in report["checks"]]
    named = rubric_problems(str(report["assignment"]))
    return named or [Problem("score", float(report["score"]), float(report["max_score"]))]


def check_name(check: dict[str, Any]) -> str:
    """A check's name on a platform: its ID, after its part's in a multi-part assignment (where
    two parts may have checks of one ID)."""
    part = check.get("part")
    return f"{part}: {check['id']}" if part else str(check["id"])


def gradable(report: dict[str, Any]) -> bool:
    """False for a report that could not be graded for a reason that is no attempt at the
    task (its code does not parse, defines nothing, or the grader itself failed)."""
    if report["status"] == "graded":
        return True
    kinds = {error["kind"] for error in report["errors"]}
    return not kinds or not kinds <= NOT_GRADABLE


def headline(report: dict[str, Any]) -> str:
    """One line: the score, or why there is none."""
    if report["status"] != "graded":
        kinds = ", ".join(dict.fromkeys(e["kind"] for e in report["errors"])) or "error"
        return (f"Score: 0 / {report['max_score']:g}: the submission could not be graded "
                f"({kinds}).")
    named = ", ".join(m["id"] for m in report["misconceptions"])
    return (f"Score: {report['score']:g} / {report['max_score']:g}"
            + (f"; misconceptions: {named}." if named else "."))
