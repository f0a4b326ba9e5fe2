"""A Markdown feedback page (GitHub job summary, Gradescope ``output``, notebooks)."""

from __future__ import annotations

from typing import Any


def _fence(text: str) -> str:
    return "```\n" + text.replace("```", "'''") + "\n```"


def render(report: dict[str, Any], *, evidence: bool = True) -> str:
    """The page; ``evidence=False`` leaves out the evidence, whose reproducing calls show probe
    values (Gradescope's always-visible output under a hidden seed)."""
    meta = report.get("metadata", {})
    lines = [
        f"## attention-grader: `{report['assignment']}`",
        "",
        f"**Score: {report['score']:g} / {report['max_score']:g}**"
        + ("" if report["status"] == "graded" else " (the submission could not be graded)"),
        "",
    ]
    if meta.get("submission"):
        lines += [f"Submission: `{meta['submission']}`", ""]
    for error in report["errors"]:
        lines += [f"**Error ({error['kind']})**", "", _fence(error["message"]), ""]
    if report["misconceptions"]:
        lines += ["### Misconceptions", ""]
        for item in report["misconceptions"]:
            bank = ", ".join(item["question_bank"])
            lines += [f"#### `{item['id']}`: {item['title']}", "", item["explanation"], ""]
            if evidence:
                lines += ["Evidence:", "", _fence(item["evidence"]), ""]
            if bank:
                lines += [f"Question bank: {bank}", ""]
    if report["checks"]:
        lines += ["### Checks", "", "| | check | points | details |", "|---|---|---|---|"]
        for check in report["checks"]:
            mark = "pass" if check["passed"] else "**fail**"
            detail = "" if check["passed"] else check["message"].replace("|", "\\|").replace(
                "\n", " ")
            lines.append(f"| {mark} | `{check['id']}` | {check['points']:g} / "
                         f"{check['max_points']:g} | {detail} |")
        lines.append("")
    return "\n".join(lines)
