"""PrairieLearn, all of it: the external grader's ``results.json`` and the grading job's entry
point (PrairieLearn's docs/externalGrading.md, "Grading results" and "The Grading Process").

- ``render``: ``results.json``: ``gradable``, ``score`` (the fraction of the points, in [0, 1]),
  ``message``, ``output`` and one test per check (``name``, ``description``, ``points``,
  ``max_points``, ``message``, ``output``). A submission that could not be graded for a reason
  that is no attempt at the task (``grader.render.outcome.NOT_GRADABLE``: it does not parse,
  defines nothing, or the grader itself failed) is ``gradable: false`` with ``format_errors``,
  so PrairieLearn charges no attempt for it. Everything is rendered from
  ``grader.render.visible.student_view``: the question's ``tests/`` folder, where the seed is
  set, is the course's, so hidden probes stay hidden.
- ``main``: the job's ``entrypoint`` (``python -m grader.platforms.prairielearn``): grades the
  student's files in ``/grade/student`` with the settings in ``/grade/tests/attention-grader.json``
  (else ``/grade/serverFilesCourse/attention-grader.json``) and always writes
  ``/grade/results/results.json``. ``deploy/prairielearn/`` holds the image's Dockerfile and the
  question's ``info.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from grader.render import text
from grader.render.formats import Format, Page
from grader.render.outcome import NOT_GRADABLE, check_name, fraction, gradable, headline
from grader.render.visible import student_view

#: PrairieLearn's own limits for an external grading job (its defaults: a 30 s timeout, 2 GiB
#: of memory and 90% of one CPU); the grader's limits must fit inside them
DEFAULT_TIMEOUT_SECONDS = 30
DEFAULT_MEMORY_MB = 2048
#: the grader's limits inside those: the whole grading in 20 s (the job's start-up and the
#: results' upload need the rest), 2 s a call, 1.5 GiB for the submission's process. The
#: settings' "limits" (names of ``grader.config.Limits``) change them for a longer timeout.
GRADER_LIMITS = {"total_seconds": 20.0, "call_seconds": 2.0, "import_seconds": 10.0,
                 "memory_mb": 1536}
SETTINGS_NAME = "attention-grader.json"
#: results.json is limited to 1 MB by PrairieLearn: the text output is cut well below that
MAX_OUTPUT_CHARS = 200_000


def _cut(value: str) -> str:
    return value if len(value) <= MAX_OUTPUT_CHARS else value[:MAX_OUTPUT_CHARS] + "\n[...]"


def _test(check: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": check_name(check),
        "description": f"{check['category']} check",
        "points": check["points"],
        "max_points": check["max_points"],
        "message": check["message"],
        "output": "",
    }


def results(report: dict[str, Any]) -> dict[str, Any]:
    """The ``results.json`` object PrairieLearn reads."""
    view = student_view(report)
    output = _cut(text.render(view))
    if not gradable(report):
        return {
            "gradable": False,
            "format_errors": [f"{e['kind']}: {e['message']}" for e in view["errors"]
                              if e["kind"] in NOT_GRADABLE],
            "message": headline(view),
            "output": output,
        }
    tests = [_test(check) for check in view["checks"]]
    if report["status"] != "graded":  # (it ran, and failed: a graded attempt worth 0)
        tests.append({"name": "submission could be graded", "description": "the function runs",
                      "points": 0.0, "max_points": report["max_score"],
                      "message": "; ".join(f"{e['kind']}: {e['message']}" for e in view["errors"]),
                      "output": ""})
    return {"gradable": True, "score": fraction(report), "message": headline(view),
            "output": output, "tests": tests}


def render(report: dict[str, Any]) -> str:
    return json.dumps(results(report), indent=2, ensure_ascii=False) + "\n"


def student_pages(output: str) -> list[Page]:
    """What a student reads: the message, the output, the format errors and every test's
    message and output (the results element shows them as text)."""
    shown = json.loads(output)
    texts = [shown.get("message", ""), shown.get("output", ""), *shown.get("format_errors", [])]
    for test in shown.get("tests", []):
        texts += [test["name"], test.get("message", ""), test.get("output", "")]
    return [Page("text", t) for t in texts]


FORMAT = Format("prairielearn", render, student_pages, keeps_hidden_tests_secret=True)


# --- the grading job ---------------------------------------------------------------------------

def settings(root: Path) -> dict[str, Any]:
    """The question's settings (``assignment``, ``seed``): its ``tests/`` folder first, then
    the course's ``serverFilesCourse``."""
    for folder in (root / "tests", root / "serverFilesCourse"):
        path = folder / SETTINGS_NAME
        if path.is_file():
            loaded = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(loaded, dict) or "assignment" not in loaded:
                raise ValueError(f"{path} must be a JSON object with an \"assignment\"")
            return loaded
    raise ValueError(f"no {SETTINGS_NAME} in {root}/tests or {root}/serverFilesCourse")


def run(root: Path) -> Path:
    """Grade ``root/student``; write and return ``root/results/results.json``."""
    from grader.config import DEFAULT_LIMITS, Limits
    from grader.files import write_atomically
    from grader.load import candidates
    from grader.model import DEFAULT_SEED, GraderError
    from grader.pipeline import error_report, grade_best_of

    results_path = root / "results" / "results.json"
    try:
        config = settings(root)
        limits = Limits(**{**DEFAULT_LIMITS.as_dict(), **GRADER_LIMITS,
                           **dict(config.get("limits", {}))})
    except (OSError, ValueError, TypeError) as exc:
        report = error_report("unknown", [GraderError("crashed", f"grader settings: {exc}")], {})
    else:
        folder = root / "student"
        files = candidates(folder) if folder.is_dir() else ()
        report = grade_best_of(files, assignment=str(config["assignment"]),
                               seed=int(config.get("seed", DEFAULT_SEED)), limits=limits)
    # written after the submission's processes are gone, over whatever it left at that path
    write_atomically(results_path, render(report))
    return results_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.platforms.prairielearn")
    parser.add_argument("--root", type=Path, default=Path("/grade"))
    arguments = parser.parse_args(argv)
    print(f"results: {run(arguments.root)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
