"""Moodle CodeRunner: the outcome of a combinator template grader (CodeRunner's Readme,
"Combinator template grading", and classes/combinator_grader_outcome.php).

The template prints one JSON object: ``fraction`` (in [0, 1]), ``testresults`` (a table whose
first row is the column headers; an ``iscorrect`` column ticks a row, an ``ishidden`` column
keeps a row from students), ``prologuehtml`` and ``epiloguehtml`` (HTML shown before and after
the table), and ``columnformats`` (``%s``: the cell is escaped and shown as text). The prologue
is ``grader.render.html`` of ``grader.render.visible.student_view`` (escaped); a check run on
hidden probes is an ``ishidden`` row, so only staff read its message.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from grader.render import html
from grader.render.formats import Format, Page
from grader.render.outcome import check_name, fraction, headline
from grader.render.visible import student_view

HEADERS = ["iscorrect", "Check", "Points", "Message", "ishidden"]
#: the formats of the columns other than iscorrect and ishidden: all text, escaped by CodeRunner
COLUMN_FORMATS = ["%s", "%s", "%s"]


def outcome(report: dict[str, Any]) -> dict[str, Any]:
    view = student_view(report)
    rows: list[list[Any]] = [list(HEADERS)]
    for check, shown in zip(report["checks"], view["checks"]):
        hidden = bool(check.get("hidden"))
        rows.append([bool(check["passed"]), check_name(check),
                     f"{check['points']:g} / {check['max_points']:g}",
                     check["message"] if hidden else shown["message"], hidden])
    for error in view["errors"]:
        rows.append([False, f"error: {error['kind']}", "", error["message"], False])
    return {
        "fraction": fraction(report),
        "prologuehtml": html.render(view),
        "testresults": rows,
        "columnformats": list(COLUMN_FORMATS),
        "epiloguehtml": f"<p>{escape(headline(view))}</p>",
    }


def render(report: dict[str, Any]) -> str:
    return json.dumps(outcome(report), ensure_ascii=False) + "\n"


def student_pages(output: str) -> list[Page]:
    """What a student reads: the prologue and epilogue (HTML) and the rows not hidden (text)."""
    shown = json.loads(output)
    header, *rows = shown["testresults"]
    hidden = header.index("ishidden")
    pages = [Page("html", shown["prologuehtml"]), Page("html", shown["epiloguehtml"])]
    for row in rows:
        if not row[hidden]:
            pages += [Page("text", str(cell)) for cell in row]
    return pages


FORMAT = Format("coderunner", render, student_pages, keeps_hidden_tests_secret=True)
