"""GitHub Classroom: the base64 JSON ``result`` read by autograding-grading-reporter."""

from __future__ import annotations

import base64
import json
from typing import Any


def result(report: dict[str, Any]) -> dict[str, Any]:
    tests = []
    for check in report["checks"]:
        tests.append({
            "name": check["id"],
            "status": "pass" if check["passed"] else "fail",
            "score": check["points"],
            "message": check["message"],
            "test_code": f"attention-grader check: {check['id']}",
            "filename": report.get("metadata", {}).get("submission", ""),
            "line_no": 0,
            "duration": 0,
        })
    if report["status"] != "graded":
        status = "error"
    else:
        status = "pass" if report["score"] >= report["max_score"] else "fail"
    return {"version": 1, "status": status, "max_score": report["max_score"], "tests": tests}


def render(report: dict[str, Any]) -> str:
    payload = json.dumps(result(report), separators=(",", ":")).encode()
    return base64.b64encode(payload).decode() + "\n"
