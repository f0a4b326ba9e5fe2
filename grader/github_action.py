"""The grading step of the composite ``action.yml`` (GitHub Classroom and any workflow).

Reads its inputs from the environment (``SUBMISSION``, ``ASSIGNMENT``, ``ATTENTION_GRADER_SEED``),
so that no input text is ever pasted into a shell command. Writes ``result=<base64 JSON>`` to
``$GITHUB_OUTPUT`` for ``autograding-grading-reporter``, the Markdown feedback to
``$GITHUB_STEP_SUMMARY`` and readable text to the log. Exits 0 whenever it wrote a result: the
reporter decides whether the run passes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

from grader import registry
from grader.config import DEFAULT_LIMITS, seed_from_environment
from grader.model import DEFAULT_SEED


def _append(variable: str, text: str) -> None:
    target = os.environ.get(variable)
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(text)


def main() -> int:
    from grader.load import stays_within
    from grader.model import GraderError
    from grader.pipeline import error_report, grade_or_crashed
    from grader.render import github, markdown, text

    submission = Path(os.environ.get("SUBMISSION", "").strip() or ".")
    assignment = os.environ.get("ASSIGNMENT", "").strip() or None
    problems = []
    if assignment is not None and not registry.exists(assignment):
        problems.append(registry.unknown_assignment(assignment))
    if not submission.is_file():
        problems.append(f"the submission {str(submission)!r} is not a file in the repository")
    elif not stays_within(submission, Path(os.environ.get("GITHUB_WORKSPACE") or submission.parent)):
        problems.append(f"the submission {str(submission)!r} is a link out of the repository; "
                        "links out of it are not followed")
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
    _append("GITHUB_OUTPUT", f"result={github.render(report).strip()}\n")
    _append("GITHUB_STEP_SUMMARY", markdown.render(report) + "\n")
    sys.stdout.write(text.render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
