"""Coursera: a custom grader's ``feedback.json`` and the grader image's entry point (Coursera's
custom graders, as its ``coursera_autograder`` tool documents them: the image reads the learner's
files from ``/shared/submission/``, the part from ``$partId``, and writes
``/shared/feedback.json``).

- ``render``: ``{"fractionalScore": <score / max_score>, "feedback": <HTML>, "feedbackType":
  "HTML"}``; the feedback is ``grader.render.html`` of ``grader.render.visible.student_view``
  (everything a submission wrote is escaped; the image holds the seed, which learners never see).
- ``main``: ``python -m grader.platforms.coursera`` grades ``/shared/submission`` with the
  settings baked into the image (``ATTENTION_GRADER_SETTINGS``, default
  ``/grader/attention-grader.json``: the assignment, or one per ``partId``, and the seed) and
  always writes the feedback. Coursera's default limits for the image: 1 vCPU, 4 GiB of memory
  and 20 minutes (``deploy/coursera/``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from grader.render import html
from grader.render.formats import Format, Page
from grader.render.outcome import fraction
from grader.render.visible import student_view

SETTINGS_VARIABLE = "ATTENTION_GRADER_SETTINGS"
DEFAULT_SETTINGS = Path("/grader/attention-grader.json")


def feedback(report: dict[str, Any]) -> dict[str, Any]:
    return {"fractionalScore": fraction(report), "feedback": html.render(student_view(report)),
            "feedbackType": "HTML"}


def render(report: dict[str, Any]) -> str:
    return json.dumps(feedback(report), ensure_ascii=False) + "\n"


def student_pages(output: str) -> list[Page]:
    return [Page("html", json.loads(output)["feedback"])]


FORMAT = Format("coursera", render, student_pages, keeps_hidden_tests_secret=True)


def assignment_for(config: dict[str, Any], part: str | None) -> str:
    """The assignment graded for ``part``: ``parts[part]`` when the settings map parts, else
    the one ``assignment``."""
    parts = config.get("parts") or {}
    if part and part in parts:
        return str(parts[part])
    if "assignment" in config:
        return str(config["assignment"])
    raise ValueError(f"no assignment for part {part!r} in the grader's settings")


def run(shared: Path, settings: Path, part: str | None) -> Path:
    """Grade ``shared/submission``; write and return ``shared/feedback.json``."""
    from grader.files import write_atomically
    from grader.load import candidates
    from grader.model import DEFAULT_SEED, GraderError
    from grader.pipeline import error_report, grade_best_of

    try:
        config = json.loads(settings.read_text(encoding="utf-8"))
        assignment = assignment_for(config, part)
    except (OSError, ValueError) as exc:
        report = error_report("unknown", [GraderError("crashed", f"grader settings: {exc}")], {})
    else:
        folder = shared / "submission"
        files = candidates(folder) if folder.is_dir() else ()
        report = grade_best_of(files, assignment=assignment,
                               seed=int(config.get("seed", DEFAULT_SEED)))
    path = shared / "feedback.json"
    write_atomically(path, render(report))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.platforms.coursera")
    parser.add_argument("--shared", type=Path, default=Path("/shared"))
    parser.add_argument("--settings", type=Path,
                        default=Path(os.environ.get(SETTINGS_VARIABLE) or DEFAULT_SETTINGS))
    arguments = parser.parse_args(argv)
    path = run(arguments.shared, arguments.settings, os.environ.get("partId"))  # noqa: SIM112 - Coursera spells it so
    print(f"feedback: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
