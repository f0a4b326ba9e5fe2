"""A Markdown feedback page (GitHub job summary, Gradescope ``output``, notebooks).

Every piece of text that can come from a submission (error messages, file names, check details
quoting an exception) goes into a code fence or is escaped, so it can neither format the page
nor inject HTML or links.
"""

from __future__ import annotations

import html
import re
from typing import Any

from grader.render.verdict import (
    LOCATED_HEADING,
    NOTES_HEADING,
    evidence_once,
    first_line,
    grading_errors,
    literal_fixes,
    located,
    notes,
    place,
    read_more,
    seed_note,
    unexplained,
)

_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
#: errors that happen before any probe runs: their messages cannot show a probe's values
LOADING_ERRORS = frozenset({"syntax-error", "invalid-notebook", "missing-function",
                            "forbidden-import", "isolation-unavailable",
                            "missing-dependency"})
HIDDEN_DETAIL = ("(details come from hidden tests: they are shown with the tests once grades are "
                 "published)")


def fence(text: str) -> str:
    """``text`` shown verbatim: no run of backticks in it can close the fence."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}\n{text}\n{marks}"


def inline(text: str) -> str:
    """``text`` as one line of plain Markdown: HTML and Markdown syntax shown, never applied
    (emphasis, code, links and table cells need their marks escaped; the rest is plain)."""
    escaped = _SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
    return " ".join(escaped.split())


def code_span(text: str) -> str:
    """``text`` as inline code: literal, whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * (longest + 1)
    return f"{marks} {' '.join(text.split())} {marks}"


def error_text(error: dict[str, Any], *, evidence: bool) -> str:
    """An error's message, or under hidden probes (``evidence=False``) a note, for errors whose
    message the submission may have written from a probe's values."""
    if evidence or error["kind"] in LOADING_ERRORS:
        return str(error["message"])
    return HIDDEN_DETAIL


def render(report: dict[str, Any], *, evidence: bool = True) -> str:
    """The page; ``evidence=False`` leaves out everything that could show a hidden probe's
    values (Gradescope's always-visible output under a hidden seed): evidence, the details of
    hidden checks and the messages of errors raised while probing."""
    meta = report.get("metadata", {})
    lines = [
        f"## attention-grader: {inline(str(report['assignment']))}",
        "",
        f"**Score: {report['score']:g} / {report['max_score']:g}**"
        + ("" if report["status"] == "graded" else " (the submission could not be graded)"),
        "",
    ]
    if meta.get("submission"):
        lines += [f"Submission: {inline(str(meta['submission']))}", ""]
    if seed_note(report):
        lines += [inline(str(seed_note(report))), ""]
    if report["misconceptions"] or grading_errors(report):  # the first screen: what to fix
        lines += ["**What to fix**", ""]
        for number, item in enumerate(report["misconceptions"], 1):
            shown = f": {inline(first_line(item['evidence']))}" if evidence else ""
            lines.append(f"{number}. {inline(item['title'])} (`{item['id']}`){shown}")
            if place(item):
                lines.append(f"   - {place(item)}: {code_span(item['location']['code'])}")
            for heading, code in literal_fixes(item):
                lines += [f"   - {inline(heading)}", "",
                          *("     " + line for line in fence("\n".join(code)).split("\n")), ""]
            if item.get("fix"):
                lines.append(f"   - Fix: {item['fix']}")
        for error in grading_errors(report):
            lines.append(f"- {inline(error['kind'])}: "
                         f"{inline(first_line(error_text(error, evidence=evidence)))}")
        lines.append("")
    verdict = unexplained(report)
    if verdict:
        lines += [verdict, ""]
    where = located(report, evidence=evidence)
    if where:
        lines += [f"**{LOCATED_HEADING}**: {inline(where[0])}", ""]
        lines += [fence(where[1]), ""] if where[1] else []
    for error in grading_errors(report):
        lines += [f"**Error ({inline(error['kind'])})**", "",
                  fence(error_text(error, evidence=evidence)), ""]
    if notes(report):
        lines += [f"**{NOTES_HEADING}**", ""]
        for error in notes(report):
            lines += [f"- {inline(error['kind'])}:", "", fence(error_text(error, evidence=evidence)),
                      ""]
    if report["misconceptions"]:
        lines += ["### Misconceptions", ""]
        for item, shown in zip(report["misconceptions"], evidence_once(report["misconceptions"])):
            lines += [f"#### `{item['id']}`: {item['title']}", "", item["explanation"], ""]
            if evidence:
                lines += ["Evidence:", "", fence(shown), ""]
            if read_more(item):
                lines += [f"Read more in the question bank: {inline(str(read_more(item)))}", ""]
    if report["checks"]:
        lines += ["### Checks", "", "| | check | points | details |", "|---|---|---|---|"]
        for check in report["checks"]:
            mark = "pass" if check["passed"] else "**fail**"
            if check["passed"]:
                detail = ""
            elif check.get("hidden") and not evidence:
                detail = HIDDEN_DETAIL
            else:
                detail = inline(check["message"])
            lines.append(f"| {mark} | `{check['id']}` | {check['points']:g} / "
                         f"{check['max_points']:g} | {detail} |")
        lines.append("")
    return "\n".join(lines)
