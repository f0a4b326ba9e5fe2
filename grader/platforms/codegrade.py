"""CodeGrade AutoTest: a custom test's feedback and its points line (CodeGrade's AutoTest docs,
"Custom Test": the test writes ``{"tag": "points", "points": "x/y"}`` as structured output,
to file descriptor 3, after its feedback on stdout).

- ``render``: the feedback as text (``grader.render.visible.student_view``), then the points
  line as the last line: the report's score over its maximum as an exact fraction of integers
  (3.7 / 10 is ``"37/100"``), so the points CodeGrade gives are the JSON report's fraction.
- ``main``: ``python -m grader.platforms.codegrade SUBMISSION [--assignment ID] [--seed N]``
  writes the feedback to stdout and the points line to file descriptor 3 when the test has it
  open (else to stdout, last).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from grader.render import text
from grader.render.formats import Format, Page
from grader.render.outcome import exact_fraction
from grader.render.visible import student_view

STRUCTURED_OUTPUT_FD = 3


def points_line(report: dict[str, Any]) -> str:
    share = exact_fraction(report)
    return json.dumps({"tag": "points", "points": f"{share.numerator}/{share.denominator}"})


def render(report: dict[str, Any]) -> str:
    return text.render(student_view(report)) + "\n" + points_line(report) + "\n"


def points(output: str) -> dict[str, Any]:
    """The points line CodeGrade reads: the last line of the output."""
    return dict(json.loads(output.rstrip("\n").splitlines()[-1]))


FORMAT = Format("codegrade", render, lambda output: [Page("text", output)],
                keeps_hidden_tests_secret=True)


def _structured_output() -> int | None:
    """File descriptor 3 when the test was given it (a pipe or a file), else None."""
    try:
        mode = os.fstat(STRUCTURED_OUTPUT_FD).st_mode
        return STRUCTURED_OUTPUT_FD if stat.S_ISFIFO(mode) or stat.S_ISREG(mode) else None
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    structured = _structured_output()  # (asked first, before this process opens files)
    from grader.model import DEFAULT_SEED
    from grader.pipeline import grade_or_crashed

    parser = argparse.ArgumentParser(prog="python -m grader.platforms.codegrade")
    parser.add_argument("submission", type=Path)
    parser.add_argument("--assignment", default=None)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    arguments = parser.parse_args(argv)
    report = grade_or_crashed(arguments.submission, assignment=arguments.assignment,
                              seed=arguments.seed)
    sys.stdout.write(text.render(student_view(report)))
    sys.stdout.flush()
    line = points_line(report) + "\n"
    if structured is not None:
        os.write(structured, line.encode())
    else:  # (not run by CodeGrade: no structured output to write to)
        sys.stdout.write(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
