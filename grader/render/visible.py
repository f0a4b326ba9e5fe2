"""What a student may see of a report while its hidden tests are secret: one policy, one pure
function, for every output a platform shows the student before grades are published.

Under a hidden seed, the probes' values are the secret: evidence quotes them, a failed hidden
check's message states them, and an error raised while probing may carry them (a submission can
write its inputs into an exception). Errors raised before any probe runs cannot, so they stay.
"""

from __future__ import annotations

import copy
from typing import Any

from grader.render.verdict import HIDDEN_DETAIL, part_views, unexplained

__all__ = ["HIDDEN_DETAIL", "hidden_tests", "student_view", "without_hidden_points"]

#: errors that happen before any probe runs: their messages cannot show a probe's values
LOADING_ERRORS = frozenset({"syntax-error", "invalid-notebook", "missing-function",
                            "forbidden-import", "isolation-unavailable",
                            "missing-dependency"})
#: the numbers of a located stage start here (``... goes wrong: at index (0, 1): ...``)
_LOCATED_NUMBERS = ": at index"


def hidden_tests(report: dict[str, Any]) -> bool:
    """Whether ``report`` was graded on hidden probes (a seed other than the public one)."""
    return bool(report.get("metadata", {}).get("hidden_probes", False))


def student_view(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` as a student may see it before grades are published: unchanged on public
    probes; under hidden probes a new report without evidence, without the messages of hidden
    checks and of errors raised while probing, and without the numbers of a located stage.
    The verdict a renderer derives from the checks' messages is kept in the metadata."""
    if not hidden_tests(report):
        return report
    view = copy.deepcopy(report)
    view["metadata"]["verdict"] = unexplained(report)
    if report.get("parts"):
        view["metadata"]["part_verdicts"] = [unexplained(part) for part in part_views(report)]
    for part in [view, *view.get("parts", [])]:  # (a multi-part report holds each part's too)
        _withhold(part)
    return view


def _withhold(view: dict[str, Any]) -> None:
    for item in view["misconceptions"]:
        item["evidence"] = ""
    for check in view["checks"]:
        if check.get("hidden"):
            check["message"] = HIDDEN_DETAIL
    for error in view["errors"]:
        if error["kind"] not in LOADING_ERRORS:
            error["message"] = HIDDEN_DETAIL
    if view.get("located"):
        message = str(view["located"]["message"])
        view["located"]["message"] = message.split(_LOCATED_NUMBERS)[0].rstrip(".") + "."


def without_hidden_points(report: dict[str, Any], when: str) -> dict[str, Any]:
    """``student_view(report)`` for a page shown while the tests on hidden probes are not:
    without the score and without the hidden checks (their points add up to it), saying
    ``when`` the student sees them. Gradescope hides the total score while tests are hidden;
    its always-visible output must not show it either."""
    view = copy.deepcopy(student_view(report))
    if not any(check.get("hidden") for check in view["checks"]):
        return view
    for part in [view, *view.get("parts", [])]:  # (a multi-part report: each part's too)
        part["checks"] = [check for check in part["checks"] if not check.get("hidden")]
    view["metadata"]["score_withheld"] = (
        f"Your score and the tests on hidden inputs are shown {when}.")
    return view
