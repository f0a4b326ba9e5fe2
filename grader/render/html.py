"""A self-contained HTML fragment of the feedback (the notebook self-check shows it in Jupyter)."""

from __future__ import annotations

import re
from html import escape
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

_STYLE = (
    "<style>.ag{font-family:system-ui,sans-serif;max-width:60em;line-height:1.4}"
    ".ag pre{background:#f6f8fa;padding:.5em;overflow-x:auto;white-space:pre-wrap}"
    ".ag .pass{color:#1a7f37}.ag .fail{color:#cf222e;font-weight:bold}"
    ".ag table{border-collapse:collapse}.ag td,.ag th{padding:2px 8px;text-align:left;"
    "border-bottom:1px solid #ddd;vertical-align:top}</style>"
)


#: what the folded part of the page holds
_FOLDED = "Details: why, the evidence, errors in full and every check"


def _prose(text: str) -> str:
    """Text of the report as HTML: escaped, its `code` spans shown as code, not as backticks."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text))


def _where_and_fix(item: dict[str, Any], above: int | None = None) -> str:
    """A finding in the first part: the line (or which finding above quotes it), the literal
    fix or else the sentence, and the sentence that shows it on a test input."""
    parts = []
    if place(item) and above:
        parts.append(f"{escape(str(place(item)))}, the line quoted in {above} above")
    elif place(item):
        parts.append(f"{escape(str(place(item)))}: "
                     f"<code>{escape(item['location']['code'])}</code>")
    fixes = literal_fixes(item)
    for heading, code in fixes:
        parts.append(f"{_prose(heading)}<pre>{escape(chr(10).join(code))}</pre>")
    if item.get("fix") and not fixes:
        parts.append(f"Fix: {_prose(item['fix'])}")
    if first_line(item["evidence"], EVIDENCE_CHARS):
        parts.append(_prose(first_line(item["evidence"], EVIDENCE_CHARS)))
    return "".join(f"<br>{part}" for part in parts)


def render(report: dict[str, Any], *, details_open: bool = False) -> str:
    """The page: the first part (score, what to fix), then the details (explanations,
    evidence, errors in full, checks) folded in ``<details>``, open if ``details_open``."""
    if report.get("parts"):
        return _render_parts(report, details_open=details_open)
    meta = report.get("metadata", {})
    graded = report["status"] == "graded"
    parts = [_STYLE, '<div class="ag">',
             f"<h3>attention-grader: <code>{escape(report['assignment'])}</code></h3>",
             f"<p><b>Score: {report['score']:g} / {report['max_score']:g}</b>"
             + ("" if graded else " (the submission could not be graded)") + "</p>"]
    if meta.get("submission"):
        parts.append(f"<p>Submission: <code>{escape(str(meta['submission']))}</code></p>")
    if maximum_note(report):
        parts.append(f"<p>{escape(str(maximum_note(report)))}</p>")
    if seed_note(report):
        parts.append(f"<p>{escape(str(seed_note(report)))}</p>")
    if report["misconceptions"] or grading_errors(report):  # the first screen: what to fix
        found = report["misconceptions"]
        items = [f"<li>{_prose(m['title'])} (<code>{escape(m['id'])}</code>)"
                 f"{_where_and_fix(m, quoted_above(found, index))}</li>"
                 for index, m in enumerate(found)]
        items += [f"<li>{escape(e['kind'])}: {escape(error_line(e))}</li>"
                  for e in grading_errors(report)]
        parts.append("<p><b>What to fix</b></p><ol>" + "".join(items) + "</ol>")
    if not report["misconceptions"] and unexplained(report):
        parts.append(f"<p>{escape(str(unexplained(report)))}</p>")
        where = located(report)
        if where:
            parts.append(f"<p><b>{LOCATED_HEADING}</b>: {escape(where[0])}</p>"
                         + (f"<pre>{escape(where[1])}</pre>" if where[1] else ""))
    elif graded and not report["misconceptions"]:
        parts.append("<p class='pass'>All checks pass and no misconception was found.</p>")
    rest: list[str] = []
    for error in grading_errors(report):
        rest.append(f"<p class='fail'>Error ({escape(error['kind'])})</p>"
                    f"<pre>{escape(error['message'])}</pre>")
    if notes(report):
        rest.append(f"<p><b>{escape(NOTES_HEADING)}</b></p>" + "".join(
            f"<p>{escape(e['kind'])}:</p><pre>{escape(e['message'])}</pre>" for e in notes(report)))
    if report["misconceptions"]:
        rest.append("<h4>Misconceptions</h4>")
        for item, shown in zip(report["misconceptions"], evidence_once(report["misconceptions"])):
            bank = read_more(item)
            rest.append(f"<h5><code>{escape(item['id'])}</code>: {_prose(item['title'])}</h5>"
                        f"<p>{_prose(item['explanation'])}</p>"
                        + (f"<p>Evidence:</p><pre>{escape(after_first_line(shown))}</pre>"
                           if after_first_line(shown) else "")
                        + (f"<p>Read more in the question bank: {escape(bank)}</p>"
                           if bank else ""))
    if report["checks"]:
        rows = []
        for check in report["checks"]:
            mark = ("<span class='pass'>pass</span>" if check["passed"]
                    else "<span class='fail'>fail</span>")
            detail = "" if check["passed"] else _prose(check["message"])
            rows.append(f"<tr><td>{mark}</td><td><code>{escape(check['id'])}</code></td>"
                        f"<td>{check['points']:g} / {check['max_points']:g}</td>"
                        f"<td>{detail}</td></tr>")
        rest.append("<h4>Checks</h4><table><tr><th></th><th>check</th><th>points</th>"
                    "<th>details</th></tr>" + "".join(rows) + "</table>")
    if rest:
        parts.append(f"<details{' open' if details_open else ''}><summary>{_FOLDED}</summary>"
                     + "\n".join(rest) + "</details>")
    parts.append("</div>")
    return "\n".join(parts)


def _render_parts(report: dict[str, Any], *, details_open: bool = False) -> str:
    """The total and each part's line, then each part's page in a section of its own."""
    meta = report.get("metadata", {})
    views = part_views(report)
    parts = [_STYLE, '<div class="ag">',
             f"<h3>attention-grader: <code>{escape(report['assignment'])}</code></h3>",
             f"<p><b>Total: {report['score']:g} / {report['max_score']:g}</b></p>"]
    if meta.get("submission"):
        parts.append(f"<p>Submission: <code>{escape(str(meta['submission']))}</code></p>")
    parts.append("<ol>" + "".join(f"<li>{escape(part_line(view))}</li>" for view in views)
                 + "</ol>")
    for number, view in enumerate(views, 1):
        page = render(view, details_open=details_open).replace(_STYLE, "", 1)
        parts.append(f"<section><h4>Part {number} of {len(views)}: "
                     f"<code>{escape(view['assignment'])}</code></h4>{page}</section>")
    parts.append("</div>")
    return "\n".join(parts)
