"""What a student reads is true: a failed check never reads like a pass (issue: "[FAIL]
inputs-unchanged ... no input array is modified"). In-process, through the notebook check's
grading of a function object: the fast tier."""

from __future__ import annotations

from typing import Any

from grader.notebook import grade_function


def test_a_failed_check_never_says_what_a_passed_one_says() -> None:
    def scaled_dot_product_attention(Q: Any, K: Any, V: Any, mask: Any = None) -> Any:
        raise ValueError("shapes do not align")

    report = grade_function(scaled_dot_product_attention, "attention")
    checks = {c["id"]: c for c in report["checks"]}
    unchanged = checks["inputs-unchanged"]
    assert not unchanged["passed"] and unchanged["points"] == 0
    assert "no input array is modified" not in unchanged["message"]
    assert "could not be seen" in unchanged["message"]
    for check in report["checks"]:
        if not check["passed"]:
            assert not check["message"].startswith(("every ", "no input")), check
