"""GitHub Classroom and any GitHub workflow, all of it: the result the reporter reads, and the
grading step of the composite ``action.yml``.

- ``render``: the base64 JSON ``result`` read by ``autograding-grading-reporter``. The reporter
  sends Classroom the sum of the tests' ``score`` fields, but its log table shows
  ``passing tests / all tests * max_score``. Both numbers agree only when every test is worth the
  same, so each check is emitted as equal units of points (``CREDIT_STEP`` by default, see
  ``grader.core.scoring``): a check worth 2.0 with 1.5 earned becomes 20 tests of 0.1, 15 passing.
- ``main``: the action's step (``python -m grader.platforms.github``). It reads its inputs from
  the environment (``SUBMISSION``, ``ASSIGNMENT``, ``ATTENTION_GRADER_SEED``), so that no input
  text is ever pasted into a shell command; writes ``result=<base64 JSON>`` to ``$GITHUB_OUTPUT``,
  the Markdown feedback to ``$GITHUB_STEP_SUMMARY`` and readable text to the log; and exits 0
  whenever it wrote a result: the reporter decides whether the run passes. A seed in a workflow
  is no secret from the student who owns the repository, so everything is shown.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from grader import registry
from grader.config import DEFAULT_LIMITS, seed_from_environment
from grader.model import DEFAULT_SEED
from grader.render.formats import Format, Page
from grader.render.verdict import units

#: past this many units, a rubric's weights are too fine to spell out one test per unit
MAX_UNITS = 400


def _fraction(value: float) -> Fraction:
    return Fraction(value).limit_denominator(10_000)


def unit_size(report: dict[str, Any]) -> Fraction:
    """The largest amount of points that divides every check's maximum and earned points."""
    amounts = [_fraction(c[key]) for c in report["checks"] for key in ("points", "max_points")]
    amounts += [_fraction(part["max_score"]) for part in report.get("parts", [])]
    amounts = [a for a in amounts if a > 0]
    if not amounts:
        return Fraction(1)
    numerators = math.gcd(*(a.numerator for a in amounts))
    denominators = math.lcm(*(a.denominator for a in amounts))
    unit = Fraction(numerators, denominators)
    total = _fraction(report["max_score"])
    if total / unit > MAX_UNITS:
        unit = total / 100
    return unit


def _tests(report: dict[str, Any]) -> list[dict[str, Any]]:
    filename = report.get("metadata", {}).get("submission", "")
    unit = unit_size(report)
    tests: list[dict[str, Any]] = []
    for prefix, part in units(report):  # (each part of a multi-part report, named by it)
        for check in part["checks"]:
            tests += _check_units(check, unit, prefix, filename)
        if part["status"] != "graded":
            tests += _not_graded_units(part, unit, prefix, filename, alone=len(units(report)) == 1)
    return tests


def _test(name: str, passed: bool, score: Fraction, message: str, filename: str,
          status: str = "") -> dict[str, Any]:
    return {"name": name, "status": status or ("pass" if passed else "fail"),
            "score": float(score) if passed else 0.0, "message": message,
            "test_code": f"attention-grader check {filename}".strip(), "filename": filename,
            "line_no": 0, "duration": 0}


def _check_units(check: dict[str, Any], unit: Fraction, prefix: str,
                 filename: str) -> list[dict[str, Any]]:
    """A check as equal-value tests, its earned points the first ones passed."""
    count = max(1, round(_fraction(check["max_points"]) / unit))
    earned = min(count, math.floor(_fraction(check["points"]) / unit + Fraction(1, 10**6)))
    name = prefix + check["id"]
    tests = []
    for index in range(count):
        passed = index < earned
        if passed:
            message = check["message"] if index == 0 else ""
        elif index == earned:
            message = check["message"]
        else:
            message = f"(the rest of {name}: see [{earned + 1}/{count}])"
        tests.append(_test(name if count == 1 else f"{name} [{index + 1}/{count}]", passed,
                           unit, message, filename))
    return tests


def _not_graded_units(part: dict[str, Any], unit: Fraction, prefix: str, filename: str,
                      alone: bool) -> list[dict[str, Any]]:
    """Why a submission (or a part of it) could not be graded: one error test alone, or, in a
    multi-part report, failed tests worth the part's points, the first saying why."""
    message = "; ".join(f"{e['kind']}: {e['message']}" for e in part["errors"])
    name = prefix + "submission can be graded"
    if alone:
        return [_test(name, False, unit, message, filename, status="error")]
    count = max(1, round(_fraction(part["max_score"]) / unit))
    return [_test(name if count == 1 else f"{name} [{index + 1}/{count}]", False, unit,
                  message if index == 0 else "", filename) for index in range(count)]


def result(report: dict[str, Any]) -> dict[str, Any]:
    """The decoded ``result``: ``version``, ``status``, ``max_score`` and one test per unit."""
    if report["status"] != "graded":
        status = "error"
    else:
        status = "pass" if report["score"] >= report["max_score"] else "fail"
    return {"version": 1, "status": status, "max_score": report["max_score"],
            "tests": _tests(report)}


def render(report: dict[str, Any]) -> str:
    payload = json.dumps(result(report), separators=(",", ":")).encode()
    return base64.b64encode(payload).decode() + "\n"


def student_pages(output: str) -> list[Page]:
    """What a student reads of a result: its tests' messages, in the reporter's log."""
    return [Page("text", test["message"]) for test in json.loads(base64.b64decode(output))["tests"]]


FORMAT = Format("github", render, student_pages)


# --- the action's step -------------------------------------------------------------------------

def _append(variable: str, text: str) -> None:
    target = os.environ.get(variable)
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(text)


def _problems(submission: Path, assignment: str | None) -> list[str]:
    """What is wrong with the step's inputs, said for the student."""
    from grader.load import stays_within

    problems = []
    if assignment is not None and not registry.exists(assignment):
        problems.append(registry.unknown_assignment(assignment))
    if not submission.is_file():
        problems.append(f"the submission {str(submission)!r} is not a file in the repository")
    elif not stays_within(submission, Path(os.environ.get("GITHUB_WORKSPACE") or submission.parent)):
        problems.append(f"the submission {str(submission)!r} is a link out of the repository; "
                        "links out of it are not followed")
    return problems


def main() -> int:
    from grader.model import GraderError
    from grader.pipeline import error_report, grade_or_crashed
    from grader.render import markdown, text

    submission = Path(os.environ.get("SUBMISSION", "").strip() or ".")
    assignment = os.environ.get("ASSIGNMENT", "").strip() or None
    problems = _problems(submission, assignment)
    try:
        seed = seed_from_environment(None)
    except ValueError:
        problems.append("the seed input is not an integer")
        seed = DEFAULT_SEED
    if problems:
        report = error_report(assignment or "unknown",
                              [GraderError("missing-function", "; ".join(problems))],
                              {"submission": submission.name})
    else:
        unsafe = os.environ.get("UNSAFE_NO_FS_ISOLATION", "").strip().lower() == "true"
        limits = dataclasses.replace(DEFAULT_LIMITS, unsafe_no_fs_isolation=unsafe)
        report = grade_or_crashed(submission, assignment=assignment, seed=seed, limits=limits)
    _append("GITHUB_OUTPUT", f"result={render(report).strip()}\n")
    _append("GITHUB_STEP_SUMMARY", markdown.render(report) + "\n")
    sys.stdout.write(text.render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
