"""Gradescope's autograder ``results.json`` (one test per check, misconceptions as tags)."""

from __future__ import annotations

import json
from typing import Any

from grader.config import GRADESCOPE_VISIBILITIES as VISIBILITIES
from grader.render import markdown

__all__ = ["VISIBILITIES", "render"]


def render(report: dict[str, Any], *, hidden_visibility: str = "after_published") -> str:
    """``results.json`` text; checks run on hidden probes get ``hidden_visibility``."""
    tags = [m["id"] for m in report["misconceptions"]]
    tests = []
    for check in report["checks"]:
        tests.append({
            "name": check["id"],
            "score": check["points"],
            "max_score": check["max_points"],
            "status": "passed" if check["passed"] else "failed",
            "output": markdown.fence(check["message"]),
            "output_format": "md",
            "tags": tags if not check["passed"] else [],
            "visibility": hidden_visibility if check.get("hidden") else "visible",
        })
    hidden = bool(report.get("metadata", {}).get("hidden_probes", False))
    if report["status"] != "graded":
        tests.append({
            "name": "submission could be graded",
            "score": 0.0,
            "max_score": report["max_score"],
            "status": "failed",
            "output": "\n\n".join(f"{e['kind']}:\n\n" + markdown.fence(
                markdown.error_text(e, evidence=not hidden)) for e in report["errors"]),
            "output_format": "md",
            "tags": [e["kind"] for e in report["errors"]],
            "visibility": "visible",
        })
    results = {
        "score": report["score"],
        # under a hidden seed the evidence would reveal the secret probe values to everyone
        "output": markdown.render(report, evidence=not hidden),
        "output_format": "md",
        "stdout_visibility": "hidden",
        "execution_time": report.get("metadata", {}).get("duration_seconds", 0.0),
        "tests": tests,
    }
    return json.dumps(results, indent=2) + "\n"
