"""The one-sentence verdict of a graded report without misconceptions, shared by the views."""

from __future__ import annotations

from typing import Any

#: how scoring says a check failed because calls failed, not because of the values
CALL_FAILURES = ("the call failed (", "the call on test input", "calls returned a numeric array")


def unexplained(report: dict[str, Any]) -> str | None:
    """What to say when nothing is named but marks were lost, or None (no such case)."""
    if report["status"] != "graded" or report["misconceptions"]:
        return None
    failed = [c for c in report["checks"] if not c["passed"]]
    if report["score"] >= report["max_score"] or not failed:
        return None
    if all(any(words in c["message"] for words in CALL_FAILURES) for c in failed):
        return ("Some calls failed (see the errors above): the checks below show what that "
                "cost; no check failed on the values your function did return.")
    return ("None of the known mistakes explains your outputs; the failed checks below say "
            "which properties are broken.")


def first_line(text: str, limit: int = 160) -> str:
    """The first line of a message, cut to ``limit`` characters (the first screen's form)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
