"""Plain text for a terminal (``attention-grader check``)."""

from __future__ import annotations

import textwrap
from typing import Any

from grader.render.verdict import (
    EVIDENCE_CHARS,
    LOCATED_HEADING,
    NOTES_HEADING,
    after_first_line,
    check_line,
    error_line,
    evidence_once,
    first_line,
    grading_errors,
    hidden_details,
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


def _wrap(text: str, indent: str) -> str:
    lines = []
    for paragraph in text.splitlines() or [""]:
        lines.append(textwrap.fill(paragraph, width=96, initial_indent=indent,
                                   subsequent_indent=indent) if paragraph else "")
    return "\n".join(lines)


def _hanging(line: str) -> str:
    return textwrap.fill(line, width=96, subsequent_indent="    ")


def _block(text: str, indent: str) -> str:
    return "\n".join(indent + line for line in text.splitlines())


def summary(report: dict[str, Any]) -> list[str]:
    """The first screen: the score, then each finding and each error in a line or two."""
    meta = report.get("metadata", {})
    function = meta.get("function") or report["assignment"]
    out = [f"attention-grader: {report['assignment']} ({function}) - {meta.get('submission', '')}",
           f"Score: {report['score']:g} / {report['max_score']:g}"
           + ("" if report["status"] == "graded" else "  (could not be graded)"), ""]
    if maximum_note(report):  # (check IDs kept whole)
        out[-1:] = [textwrap.fill(str(maximum_note(report)), 96, break_on_hyphens=False), ""]
    if seed_note(report):
        out[-1:] = [_wrap(str(seed_note(report)), ""), ""]
    if report["misconceptions"] or grading_errors(report):
        out.append("What to fix")
        for block in first_part_blocks(report):
            out += block
        for error in grading_errors(report):
            out.append(_hanging(f"  - {error['kind']}: {error_line(error)}"))
        out.append("")
    verdict = unexplained(report)
    if verdict:
        out += [verdict, ""]
    where = located(report)
    if where:
        out += [LOCATED_HEADING, _wrap(where[0], "  ")]
        out += [f"      {where[1]}", ""] if where[1] else [""]
    if report["status"] == "graded" and not report["misconceptions"] and (
            report["score"] == report["max_score"]):
        out += ["All checks pass and no misconception was found.", ""]
    if notes(report):
        out.append(NOTES_HEADING)
        out += [_hanging(f"  - {e['kind']}: {error_line(e)}") for e in notes(report)]
        out.append("")
    for note in ("precision_note",):
        if meta.get(note):
            out += [f"Note: {meta[note]}.", ""]
    return out


def first_part_blocks(report: dict[str, Any]) -> list[list[str]]:
    """Each finding's block of the first part: its title, the line, the literal fix or else the
    sentence, and the one sentence that shows it on a test input."""
    blocks = []
    for number, item in enumerate(report["misconceptions"], 1):
        out = [f"  {number}. {item['title']} ({item['id']})"]
        above = quoted_above(report["misconceptions"], number - 1)
        if place(item) and above:
            out.append(_wrap(f"{place(item)}, the line quoted in {above} above.", "     "))
        elif place(item):
            out.append(f"     {place(item)}:")
            out.append(f"         {item['location']['code']}")
        fixes = literal_fixes(item)
        for heading, code in fixes:
            out.append(_wrap(heading, "     "))
            out += [f"         {line}" for line in code]
        if item.get("fix") and not fixes:
            out.append(_wrap(f"Fix: {item['fix']}", "     "))
        if first_line(item["evidence"], EVIDENCE_CHARS):
            out.append(_wrap(first_line(item["evidence"], EVIDENCE_CHARS), "     "))
        blocks.append(out)
    return blocks


def render(report: dict[str, Any]) -> str:
    """The whole text report: the first part (``summary``), then the details of each finding,
    the errors in full, and one line per check."""
    if report.get("parts"):
        return _render_parts(report)
    return "\n".join(summary(report) + rest(report)).rstrip() + "\n"


def rest(report: dict[str, Any]) -> list[str]:
    """What comes after the first part: each finding's explanation and evidence (its sentence
    already shown above), the errors in full, and the checks, one line each."""
    out = []
    cited: dict[str, str] = {}  # (items cited by two findings: named once)
    if report["misconceptions"]:
        out.append("Details")
        for number, (item, evidence) in enumerate(zip(report["misconceptions"],
                                                      evidence_once(report["misconceptions"])),
                                                  1):
            out.append(f"  {number}. {item['id']}")
            out.append(_wrap(item["explanation"], "      "))
            shown = after_first_line(evidence)
            if shown:
                out.append("      Evidence:")
                out.append(_block(shown, "        "))
            bank = read_more(item)
            if bank and bank in cited:
                out.append(f"      Read more: the items cited for {cited[bank]} above.")
            elif bank:
                cited[bank] = item["id"]
                out.append(_wrap(f"Read more in the question bank: {bank}", "      "))
        out.append("")
    for heading, errors in (("Errors in full", grading_errors(report)),
                            ("Notes in full", notes(report))):
        # (an error the first part showed whole is not shown again)
        errors = [e for e in errors if error_line(e) != e["message"].strip()]
        if errors:
            out.append(heading)
            for error in errors:
                out.append(f"  [{error['kind']}]")
                out.append(_block(error["message"], "    "))
            out.append("")
    if report["checks"]:
        out.append("Checks")
        out += [check_line(check, 96) for check in report["checks"]]
        if hidden_details(report):
            out.append(_hanging(str(hidden_details(report))))
    return out


def _render_parts(report: dict[str, Any]) -> str:
    """A multi-part report: the total and each part's line first, then each part as a report
    of its own."""
    meta = report.get("metadata", {})
    views = part_views(report)
    out = [f"attention-grader: {report['assignment']} ({len(views)} parts) - "
           f"{meta.get('submission', '')}",
           f"Total: {report['score']:g} / {report['max_score']:g}", ""]
    out += [_hanging(f"  {number}. {part_line(view)}") for number, view in enumerate(views, 1)]
    for number, view in enumerate(views, 1):
        heading = f"Part {number} of {len(views)}: {view['assignment']} ({view['metadata']['function']})"
        out += ["", heading, "=" * len(heading)]
        out += render(view).splitlines()[1:]  # (the part's own title line is the heading)
    return "\n".join(out).rstrip() + "\n"
