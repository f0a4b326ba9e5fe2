"""Autolab, all of it: the autoresult and the grading step of an autograded lab (Autolab's
docs/lab.md, "Writing Autograders", and docs/features/formatted-feedback.md).

- ``render``: what the autograder prints: the feedback as text, then the semantic-feedback line
  (``{"_presentation": "semantic", ...}``, one stage with a test per check) and, as the last
  line, the autoresult ``{"scores": {"<problem>": points, ...}}``. The problems are the rubric's
  checks (``attention-grader`` lists them with ``python -m grader.platforms.autolab problems
  ASSIGNMENT``: define those names and maxima on the lab's page), or the parts of a multi-part
  assignment. Everything is rendered from ``grader.render.visible.student_view``: the seed is in
  ``autograde.tar``, which students never see.
- ``main``: ``python -m grader.platforms.autolab grade HANDIN --settings FILE``, the command the
  lab's ``autograde-Makefile`` runs (``deploy/autolab/``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from grader.render import text
from grader.render.formats import Format, Page
from grader.render.outcome import check_name, problems, rubric_problems
from grader.render.visible import student_view

STAGE = "Checks"


def _points(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(float(value), 6)


def scores(report: dict[str, Any]) -> dict[str, float | int]:
    """The autoresult's ``scores``: points per problem, summing to the report's score."""
    return {problem.name: _points(problem.points) for problem in problems(report)}


def presentation(view: dict[str, Any]) -> dict[str, Any]:
    """The semantic-feedback line: one stage, a test per check (its message as the hint)."""
    tests: dict[str, Any] = {}
    for check in view["checks"]:
        tests[check_name(check)] = ({"passed": True} if check["passed"] else
                              {"passed": False, "hint": check["message"]})
    for error in view["errors"]:
        tests.setdefault(f"error: {error['kind']}", {"passed": False, "hint": error["message"]})
    return {"_presentation": "semantic", "stages": [STAGE], STAGE: tests}


def render(report: dict[str, Any]) -> str:
    view = student_view(report)
    # (one line each: the JSON encoder escapes every newline a message holds)
    return (text.render(view) + "\n" + json.dumps(presentation(view), ensure_ascii=False) + "\n"
            + json.dumps({"scores": scores(report)}) + "\n")


def autoresult(output: str) -> dict[str, Any]:
    """The autoresult Autolab reads: the last line of the output."""
    return dict(json.loads(output.rstrip("\n").splitlines()[-1]))


def student_pages(output: str) -> list[Page]:
    """Autolab shows students the autograder's whole output, and the semantic table's hints."""
    lines = output.rstrip("\n").splitlines()
    hints = [str(test.get("hint", "")) for test in json.loads(lines[-2])[STAGE].values()]
    return [Page("text", output), *(Page("text", hint) for hint in hints)]


FORMAT = Format("autolab", render, student_pages, keeps_hidden_tests_secret=True)


# --- the lab's grading step --------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.platforms.autolab")
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("grade", help="grade the handin file (in the autograde-Makefile)")
    grade.add_argument("handin", type=Path)
    grade.add_argument("--settings", type=Path, required=True,
                       help="JSON with the assignment and the seed (from autograde.tar)")
    listing = commands.add_parser("problems", help="the problems to define on the lab's page")
    listing.add_argument("assignment")
    arguments = parser.parse_args(argv)
    if arguments.command == "problems":
        for problem in rubric_problems(arguments.assignment):
            print(f"{problem.name}\t{problem.max_points:g}")
        return 0
    from grader.load import has_submission_suffix
    from grader.model import DEFAULT_SEED
    from grader.pipeline import grade_best_of

    config = json.loads(arguments.settings.read_text(encoding="utf-8"))
    handin = arguments.handin
    files = (handin,) if handin.is_file() and has_submission_suffix(handin) else ()
    report = grade_best_of(files, assignment=str(config["assignment"]),
                           seed=int(config.get("seed", DEFAULT_SEED)))
    sys.stdout.write(render(report))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
