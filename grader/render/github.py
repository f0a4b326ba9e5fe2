"""GitHub Classroom: the base64 JSON ``result`` read by ``autograding-grading-reporter``.

The reporter sends Classroom the sum of the tests' ``score`` fields, but its log table shows
``passing tests / all tests * max_score``. Both numbers agree only when every test is worth the
same, so each check is emitted as equal units of points (``CREDIT_STEP`` by default, see
``grader.core.scoring``): a check worth 2.0 with 1.5 earned becomes 20 tests of 0.1, 15 passing.
"""

from __future__ import annotations

import base64
import json
import math
from fractions import Fraction
from typing import Any

#: past this many units, a rubric's weights are too fine to spell out one test per unit
MAX_UNITS = 400


def _fraction(value: float) -> Fraction:
    return Fraction(value).limit_denominator(10_000)


def unit_size(report: dict[str, Any]) -> Fraction:
    """The largest amount of points that divides every check's maximum and earned points."""
    amounts = [_fraction(c[key]) for c in report["checks"] for key in ("points", "max_points")]
    amounts = [a for a in amounts if a > 0]
    if not amounts:
        return Fraction(1)
    numerators = math.gcd(*(a.numerator for a in amounts))
    denominators = math.lcm(*(a.denominator for a in amounts))
    unit = Fraction(numerators, denominators)
    total = _fraction(report["max_score"])
    if total / unit > MAX_UNITS:
        unit = total / 100
    return unit


def _tests(report: dict[str, Any]) -> list[dict[str, Any]]:
    filename = report.get("metadata", {}).get("submission", "")
    unit = unit_size(report)
    tests: list[dict[str, Any]] = []
    for check in report["checks"]:
        units = max(1, round(_fraction(check["max_points"]) / unit))
        earned = min(units, math.floor(_fraction(check["points"]) / unit + Fraction(1, 10**6)))
        for index in range(units):
            passed = index < earned
            name = check["id"] if units == 1 else f"{check['id']} [{index + 1}/{units}]"
            if passed:
                message = check["message"] if index == 0 else ""
            elif index == earned:
                message = check["message"]
            else:
                message = f"(the rest of {check['id']}: see [{earned + 1}/{units}])"
            tests.append({
                "name": name,
                "status": "pass" if passed else "fail",
                "score": float(unit) if passed else 0.0,
                "message": message,
                "test_code": f"attention-grader check {filename}".strip(),
                "filename": filename,
                "line_no": 0,
                "duration": 0,
            })
    if report["status"] != "graded":
        message = "; ".join(f"{e['kind']}: {e['message']}" for e in report["errors"])
        tests.append({
            "name": "submission can be graded", "status": "error", "score": 0.0,
            "message": message, "test_code": f"attention-grader check {filename}".strip(),
            "filename": filename, "line_no": 0, "duration": 0,
        })
    return tests


def result(report: dict[str, Any]) -> dict[str, Any]:
    """The decoded ``result``: ``version``, ``status``, ``max_score`` and one test per unit."""
    if report["status"] != "graded":
        status = "error"
    else:
        status = "pass" if report["score"] >= report["max_score"] else "fail"
    return {"version": 1, "status": status, "max_score": report["max_score"],
            "tests": _tests(report)}


def render(report: dict[str, Any]) -> str:
    payload = json.dumps(result(report), separators=(",", ":")).encode()
    return base64.b64encode(payload).decode() + "\n"
