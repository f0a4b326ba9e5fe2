"""Plain text for a terminal (``attention-grader check``)."""

from __future__ import annotations

import textwrap
from typing import Any

from grader.render.verdict import unexplained


def _wrap(text: str, indent: str) -> str:
    lines = []
    for paragraph in text.splitlines() or [""]:
        lines.append(textwrap.fill(paragraph, width=96, initial_indent=indent,
                                   subsequent_indent=indent) if paragraph else "")
    return "\n".join(lines)


def _block(text: str, indent: str) -> str:
    return "\n".join(indent + line for line in text.splitlines())


def render(report: dict[str, Any]) -> str:
    meta = report.get("metadata", {})
    function = meta.get("function") or report["assignment"]
    out = [f"attention-grader: {report['assignment']} ({function}) - {meta.get('submission', '')}",
           f"Score: {report['score']:g} / {report['max_score']:g}"
           + ("" if report["status"] == "graded" else "  (could not be graded)"), ""]
    if report["errors"]:
        out.append("Errors")
        for error in report["errors"]:
            out.append(f"  [{error['kind']}]")
            out.append(_block(error["message"], "    "))
        out.append("")
    if report["misconceptions"]:
        out.append("Misconceptions found")
        for item in report["misconceptions"]:
            out.append(f"  * {item['id']}: {item['title']}")
            out.append(_wrap(item["explanation"], "      "))
            out.append("      Evidence:")
            out.append(_block(item["evidence"], "        "))
            if item["question_bank"]:
                out.append(f"      Question bank: {', '.join(item['question_bank'])}")
        out.append("")
    elif unexplained(report):
        out.append(str(unexplained(report)))
        out.append("")
    if report["checks"]:
        out.append("Checks")
        for check in report["checks"]:
            mark = "PASS" if check["passed"] else "FAIL"
            out.append(f"  [{mark}] {check['id']} ({check['points']:g}/{check['max_points']:g})")
            if not check["passed"]:
                out.append(_wrap(check["message"], "      "))
    if report["status"] == "graded" and not report["misconceptions"] and (
        report["score"] == report["max_score"]
    ):
        out.append("")
        out.append("All checks pass and no misconception was found.")
    return "\n".join(out).rstrip() + "\n"
