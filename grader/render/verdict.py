"""What every view says the same way: the verdict of a graded report without misconceptions,
where a finding's line is, and what the question-bank items it cites are about."""

from __future__ import annotations

import re
from typing import Any

from grader.model import line_words

#: what a student reads instead of a withheld message (``grader.render.visible``)
HIDDEN_DETAIL = ("(details come from hidden tests: they are shown with the tests once grades are "
                 "published)")

#: how scoring says a check failed because calls failed, not because of the values
CALL_FAILURES = ("the call failed (", "the call on test input", "calls returned a numeric array")


def unexplained(report: dict[str, Any]) -> str | None:
    """What to say when nothing is named but marks were lost, or None (no such case). A
    student view (``grader.render.visible``) carries it, decided before messages were withheld."""
    meta = report.get("metadata", {})
    if "verdict" in meta:
        return meta["verdict"]
    if report["status"] != "graded" or report["misconceptions"]:
        return None
    failed = [c for c in report["checks"] if not c["passed"]]
    if report["score"] >= report["max_score"] or not failed:
        return None
    if all(any(words in c["message"] for words in CALL_FAILURES) for c in failed):
        return ("Some calls failed (see the errors above): the checks below show what that "
                "cost; no check failed on the values your function did return.")
    return ("None of the known mistakes explains your outputs; the failed checks below say "
            "which properties are broken.")


_WHERE = re.compile(r"^(code cell \d+|the file): ")


#: how much of a finding's evidence sentence the first part shows (a sentence, whole)
EVIDENCE_CHARS = 400


def first_line(text: str, limit: int = 160) -> str:
    """The line of a message that says what happened, cut to ``limit`` characters (the first
    screen's form): its first line, or for a traceback the exception it ends with."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    if len(lines) > 1 and any(x.split(': ', 1)[-1].lstrip().startswith('File "') for x in lines):
        where = _WHERE.match(line)
        line = (where.group(0) if where else "") + lines[-1].strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def cut(text: str, limit: int) -> str:
    """``text`` on one line of at most ``limit`` characters, cut at a word ("..." marks it)."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    line = indent + " ".join(text.split())
    if len(line) <= limit:
        return line
    head = line[: limit - 3]
    return (head.rsplit(" ", 1)[0] if " " in head[limit // 2:] else head).rstrip(",;:") + "..."


def after_first_line(text: str) -> str:
    """Evidence without its first line (the sentence the first part shows already)."""
    return text.strip().partition("\n")[2]


def check_line(check: dict[str, Any], width: int) -> str:
    """A check in one line: its mark, ID and points, and for a failed one what failed, cut to
    ``width`` characters."""
    mark = "PASS" if check["passed"] else "FAIL"
    line = f"  [{mark}] {check['id']} ({check['points']:g}/{check['max_points']:g})"
    if check["passed"] or not check["message"]:
        return line
    if check["message"] == HIDDEN_DETAIL:  # (said once, under the checks: ``hidden_details``)
        return f"{line}: details hidden"
    values = _VALUES.match(check["message"])
    message = (f"{values.group(1)} test inputs right; smallest failing: '{values.group(2)}'"
               if values else check["message"])
    return cut(f"{line}: {message}", width)


def hidden_details(report: dict[str, Any]) -> str | None:
    """The line under the checks when some of their details are withheld, or None."""
    if any(c["message"] == HIDDEN_DETAIL for c in report["checks"] if not c["passed"]):
        return "  Details hidden: " + HIDDEN_DETAIL.strip("()") + "."
    return None


#: how a check of the values states what failed (``grader.core.scoring``)
_VALUES = re.compile(r"(\d+ / \d+) test inputs give the right answer\. Smallest failing one, "
                     r"'([^']*)'")


#: how ``report.call_errors`` words calls that failed the same way
_FAILED_CALLS = re.compile(r"^(\d+ of \d+ calls) failed this way \(test inputs: [^)]*\); "
                          r"first on test input '([^']*)': (.*)$", re.DOTALL)


def error_line(error: dict[str, Any], limit: int = 160) -> str:
    """An error in one line: for calls that failed, the exception first (never cut off by the
    list of test inputs), then how many calls failed so; otherwise ``first_line``."""
    failed = _FAILED_CALLS.match(error["message"].strip())
    if not failed:
        return first_line(error["message"], limit)
    count, probe, rest = failed.groups()
    lines = [line.strip() for line in rest.splitlines() if line.strip()]
    exception = lines[-1] if lines else ""
    where = _WHERE.match(lines[0]) if lines else None
    tail = f" ({count} failed so, first on test input '{probe}')"
    return cut((where.group(0) if where else "") + exception, max(40, limit - len(tail))) + tail


def place(item: dict[str, Any]) -> str | None:
    """Where a finding first shows ("line 7", "cell 3, line 7") and the value that line
    computes; None when no line was found (the code itself is left to the view, which quotes
    it safely)."""
    location = item.get("location")
    if not location:
        return None
    return f"Shows first in {_line(location)} ({location['computes']})"


def quoted_above(items: list[dict[str, Any]], index: int) -> int | None:
    """The number (from 1) of an earlier finding that quotes the same line as finding
    ``index``, or None: the line is quoted once, the later finding points at it."""
    location = items[index].get("location")
    if not location:
        return None
    key = (location.get("cell"), location["line"])
    for number, earlier in enumerate(items[:index], 1):
        other = earlier.get("location")
        if other and (other.get("cell"), other["line"]) == key:
            return number
    return None


def _line(location: dict[str, Any]) -> str:
    """"line 7", or in a notebook "code cell 3, line 7"."""
    return line_words(location.get("cell"), location["line"])


def literal_fixes(item: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The finding's literal fix, line by line: what to do with each line, and the code lines
    to write (indented like it); the quoted line first, then the other lines the same mistake
    is written on. Empty when the report has no literal fix."""
    location = item.get("location") or {}
    fixed = location.get("fixed")
    if not fixed:
        return []
    lines = str(fixed).split("\n")
    if len(lines) > 1 and lines[0] == location["code"]:
        fixes = [("Keep that line and add after it, indented the same:", lines[1:])]
    else:
        fixes = [("Change that line to:", lines)]
    for other in location.get("also", []):
        fixes.append((f"Also change {_line(other)}, `{other['code']}`, to:",
                      str(other["fixed"]).split("\n")))
    return fixes


def read_more(item: dict[str, Any]) -> str | None:
    """The finding's question-bank items, each with what it is about."""
    from reference.question_bank import read_more as about

    items = item.get("question_bank")
    if not items:
        return None
    return f"{about(items)}. More on each: attention-grader explain {items[0]}"


def grading_errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The errors that cost marks or stopped grading (the rest are notes)."""
    return [e for e in report["errors"] if e.get("affects_grade", True)]


def notes(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Errors that did not change the score (a notebook cell that failed while every call of
    the graded function worked): shown after the grade, as notes."""
    return [e for e in report["errors"] if not e.get("affects_grade", True)]


NOTES_HEADING = "Notes (these did not change your score)"


CALL_MARK = "Reproduce it with:\n"


def evidence_once(items: list[dict[str, Any]]) -> list[str]:
    """Each finding's evidence, with a reproducing call already shown for an earlier finding
    replaced by a pointer to it (one call serves the report), and so a line of numbers
    already shown (two mistakes that give the same numbers there)."""
    shown: dict[str, str] = {}
    told: dict[str, str] = {}
    out = []
    for item in items:
        head, mark, call = item["evidence"].partition(CALL_MARK)
        lines = head.split("\n")
        for number, line in enumerate(lines[1:], 1):
            if line.strip() and line in told:
                lines[number] = f"The numbers are those shown for {told[line]} above."
            elif line.strip():
                told[line] = item["id"]
        head = "\n".join(lines)
        if mark and call in shown:
            out.append(f"{head}Reproduce {item['id']} with the call shown for {shown[call]} "
                       "above.")
        else:
            if mark:
                shown[call] = item["id"]
            out.append(f"{head}{mark}{call}")
    return out


def located(report: dict[str, Any]) -> tuple[str, str | None] | None:
    """Where a wrong submission no misconception explains first goes wrong: the sentence and
    the line's code, or None."""
    found = report.get("located")
    if not found:
        return None
    location = found.get("location")
    return str(found["message"]), (str(location["code"]) if location else None)


LOCATED_HEADING = "Where it first goes wrong"


def maximum_note(report: dict[str, Any]) -> str | None:
    """Why the maximum is below the rubric's (a course's interface that cannot take some test
    inputs: the checks built on them are not run), or None."""
    left_out = report.get("metadata", {}).get("not_probed") or []
    if not left_out:
        return None
    full = report["max_score"] + sum(float(n.get("points", 0.0)) for n in left_out)
    instead = f", not {full:g}" if full > report["max_score"] else ""
    why = "; ".join(sorted({str(n["why"]) for n in left_out}))
    return (f"Graded out of {report['max_score']:g}{instead}: the course's interface cannot take "
            f"some test inputs ({why}), so these checks were not run: "
            + ", ".join(str(n["check"]) for n in left_out) + ".")


def seed_note(report: dict[str, Any]) -> str | None:
    """Under hidden tests, why a wrong submission's score may differ from the self-check's."""
    if not report.get("metadata", {}).get("hidden_probes") or report["score"] >= report["max_score"]:
        return None
    return ("These are hidden tests, with other values than your self-check: the same mistakes "
            "are named, but each may cost a different number of points here.")


#: what each part's view carries of the whole report's metadata
_PART_METADATA = ("seed", "hidden_probes", "grader_version", "submission")


def part_views(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each part of a multi-part report as a report of its own (what a renderer shows in the
    part's section); empty for a one-part report."""
    meta = report.get("metadata", {})
    views = []
    verdicts = meta.get("part_verdicts", [])
    for number, part in enumerate(report.get("parts", [])):
        own = {key: meta[key] for key in (*_PART_METADATA, "score_withheld") if key in meta}
        own["function"] = part["function"]
        if part.get("not_probed"):
            own["not_probed"] = part["not_probed"]
        view = {"schema_version": report["schema_version"], "assignment": part["assignment"],
                **{key: part[key] for key in ("status", "score", "max_score", "misconceptions",
                                              "checks", "errors")},
                "metadata": own}
        if "part_verdicts" in meta:  # (a student's view: the part's verdict, from its checks)
            own["verdict"] = verdicts[number] if number < len(verdicts) else None
        if part.get("located"):
            view["located"] = part["located"]
        views.append(view)
    return views


def part_line(view: dict[str, Any]) -> str:
    """A part's line in the total's summary: its ID, function, points and what stopped it."""
    stopped = "" if view["status"] == "graded" else " (not graded: " + ", ".join(
        sorted({e["kind"] for e in view["errors"]})) + ")"
    found = len(view["misconceptions"])
    named = f", {found} misconception{'s' if found != 1 else ''}" if found else ""
    return (f"{view['assignment']} ({view['metadata']['function']}): "
            f"{view['score']:g} / {view['max_score']:g}{named}{stopped}")


def units(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """What a platform lists tests for: the report itself, or each part of a multi-part report
    as a report of its own, with the prefix its tests' names take ("attention: ")."""
    views = part_views(report)
    if not views:
        return [("", report)]
    return [(f"{view['assignment']}: ", view) for view in views]
