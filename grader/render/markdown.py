"""A Markdown feedback page (GitHub job summary, Gradescope ``output``, notebooks).

Every piece of text that can come from a submission (error messages, file names, check details
quoting an exception) goes into a code fence or is escaped, so it can neither format the page
nor inject HTML or links. It shows what the report holds: a page for a student under hidden
tests renders ``grader.render.visible.student_view(report)``, whose evidence is empty.
"""

from __future__ import annotations

import html
import re
from typing import Any

from grader.render.verdict import (
    EVIDENCE_CHARS,
    LOCATED_HEADING,
    NOTES_HEADING,
    after_first_line,
    error_line,
    evidence_once,
    first_line,
    grading_errors,
    literal_fixes,
    located,
    maximum_note,
    notes,
    part_line,
    part_views,
    place,
    quoted_above,
    read_more,
    seed_note,
    unexplained,
)

_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


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


def render(report: dict[str, Any]) -> str:
    """The page: score, what to fix, errors, misconceptions (with their evidence, when the
    report holds it) and checks; for a multi-part report, the total, then each part's."""
    if report.get("parts"):
        return _render_parts(report)
    meta = report.get("metadata", {})
    lines = [
        f"## attention-grader: {inline(str(report['assignment']))}",
        "",
        # (a page shown while hidden tests are, withholds the score: visible.without_hidden_points)
        str(meta["score_withheld"]) if meta.get("score_withheld") else
        f"**Score: {report['score']:g} / {report['max_score']:g}**"
        + ("" if report["status"] == "graded" else " (the submission could not be graded)"),
        "",
    ]
    if meta.get("submission"):
        lines += [f"Submission: {inline(str(meta['submission']))}", ""]
    if maximum_note(report):
        lines += [inline(str(maximum_note(report))), ""]
    if seed_note(report):
        lines += [inline(str(seed_note(report))), ""]
    if report["misconceptions"] or grading_errors(report):  # the first screen: what to fix
        lines += ["**What to fix**", ""]
        items = report["misconceptions"]
        for number, item in enumerate(items, 1):
            lines.append(f"{number}. {inline(item['title'])} (`{item['id']}`)")
            above = quoted_above(items, number - 1)
            if place(item) and above:
                lines.append(f"   - {place(item)}, the line quoted in {above} above")
            elif place(item):
                lines.append(f"   - {place(item)}: {code_span(item['location']['code'])}")
            fixes = literal_fixes(item)
            for heading, code in fixes:
                lines += [f"   - {inline(heading)}", "",
                          *("     " + line for line in fence("\n".join(code)).split("\n")), ""]
            if item.get("fix") and not fixes:
                lines.append(f"   - Fix: {item['fix']}")
            if item["evidence"]:
                lines.append(f"   - {inline(first_line(item['evidence'], EVIDENCE_CHARS))}")
        for error in grading_errors(report):
            lines.append(f"- {inline(error['kind'])}: "
                         f"{inline(error_line(error))}")
        lines.append("")
    verdict = unexplained(report)
    if verdict:
        lines += [verdict, ""]
    where = located(report)
    if where:
        lines += [f"**{LOCATED_HEADING}**: {inline(where[0])}", ""]
        lines += [fence(where[1]), ""] if where[1] else []
    for error in grading_errors(report):
        lines += [f"**Error ({inline(error['kind'])})**", "",
                  fence(error["message"]), ""]
    if notes(report):
        lines += [f"**{NOTES_HEADING}**", ""]
        for error in notes(report):
            lines += [f"- {inline(error['kind'])}:", "", fence(error["message"]), ""]
    if report["misconceptions"]:
        lines += ["### Misconceptions", ""]
        for item, shown in zip(report["misconceptions"], evidence_once(report["misconceptions"])):
            lines += [f"#### `{item['id']}`: {item['title']}", "", item["explanation"], ""]
            if after_first_line(shown):
                lines += ["Evidence:", "", fence(after_first_line(shown)), ""]
            if read_more(item):
                lines += [f"Read more in the question bank: {inline(str(read_more(item)))}", ""]
    if report["checks"]:
        lines += ["### Checks", "", "| | check | points | details |", "|---|---|---|---|"]
        for check in report["checks"]:
            mark = "pass" if check["passed"] else "**fail**"
            detail = "" if check["passed"] else inline(check["message"])
            lines.append(f"| {mark} | `{check['id']}` | {check['points']:g} / "
                         f"{check['max_points']:g} | {detail} |")
        lines.append("")
    return "\n".join(lines)


def _render_parts(report: dict[str, Any]) -> str:
    meta = report.get("metadata", {})
    views = part_views(report)
    withheld = meta.get("score_withheld")  # (hidden tests' points: no total, no part's)
    lines = [f"## attention-grader: {inline(str(report['assignment']))}", "",
             f"**{inline(str(withheld))}**" if withheld else
             f"**Total: {report['score']:g} / {report['max_score']:g}**", ""]
    if meta.get("submission"):
        lines += [f"Submission: {inline(str(meta['submission']))}", ""]
    lines += [f"{number}. {inline(view['assignment'] if withheld else part_line(view))}"
              for number, view in enumerate(views, 1)]
    for number, view in enumerate(views, 1):
        page = render(view).split("\n")
        title = (f"### Part {number} of {len(views)}: {inline(str(view['assignment']))} "
                 f"({inline(str(view['metadata']['function']))})")
        lines += ["", title, *page[1:]]  # (the part's page without its own title)
    return "\n".join(lines).rstrip() + "\n"
