"""pytest plugin: ``pytest --attention-submission PATH [--attention-assignment ID]``.

The same settings can live in the repository's pytest configuration (``attention_submission =
attention.ipynb`` under ``[pytest]``), so that plain ``pytest`` grades the submission.

Grades the submission once (isolated, exactly as ``attention-grader grade``) and turns every check
of the report into a test item that passes or fails with the check's feedback, so pytest-based
graders (such as classroom-resources/autograding-python-grader) and students' own CI work
unchanged. Without ``--attention-submission`` the plugin does nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attention-grader", "grading an attention submission")
    group.addoption("--attention-submission", metavar="PATH", default=None,
                    help="grade this .py or .ipynb file; every check becomes a test")
    group.addoption("--attention-assignment", metavar="ID", default=None,
                    help="assignment ID (softmax, attention, multi_head_attention); inferred "
                         "when omitted")
    group.addoption("--attention-seed", metavar="N", type=int, default=None,
                    help="probe seed (default 0, or $ATTENTION_GRADER_SEED)")
    # the same settings from pytest.ini / pyproject.toml, so that a plain `pytest` (or a
    # pytest-based grader that passes no options) grades the repository's submission
    parser.addini("attention_submission", "the .py or .ipynb file to grade", default="")
    parser.addini("attention_assignment", "its assignment ID (inferred when empty)", default="")


def _setting(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(name) or config.getini(name)
    if not value:
        return None
    if config.getoption(name) is None and name == "attention_submission":
        return str(config.rootpath / str(value))  # ini paths are relative to the ini file
    return str(value)


REPORT = pytest.StashKey[dict]()


class CheckFailed(Exception):
    """A check of the report did not pass; the message is the feedback."""


class CheckItem(pytest.Item):
    def __init__(self, *, passed: bool, feedback: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.passed = passed
        self.feedback = feedback

    def runtest(self) -> None:
        if not self.passed:
            raise CheckFailed(self.feedback)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"attention-grader: {self.name}"


class SubmissionFile(pytest.File):
    """The submission as a pytest node; its items are the report's checks."""

    def __init__(self, *, report: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report = report

    def collect(self) -> list[pytest.Item]:
        from grader.render.verdict import grading_errors

        report = self.report
        named = "".join(_named(m) for m in report["misconceptions"])
        context = f"\n\nMisconceptions named for this submission:{named}" if named else ""
        items: list[pytest.Item] = []
        errors = grading_errors(report)
        if report["status"] != "graded" or errors:
            items.append(CheckItem.from_parent(
                self, name="submission-runs", passed=report["status"] == "graded"
                and not errors, feedback="\n".join(f"[{e['kind']}] {e['message']}"
                                                   for e in errors)))
        for check in report["checks"]:
            # (a multi-part assignment: each part's checks, named with their part)
            name = f"{check['part']}::{check['id']}" if check.get("part") else check["id"]
            feedback = (f"{name}: {check['points']:g} / {check['max_points']:g} points\n"
                        f"{check['message']}{context}")
            items.append(CheckItem.from_parent(self, name=name, passed=check["passed"],
                                               feedback=feedback))
        return items


def _named(item: dict[str, Any]) -> str:
    """A misconception as a failed check's message lists it: the title, the line, the fix."""
    from grader.render.verdict import place

    text = f"\n  - {item['id']}: {item['title']}"
    if place(item):
        text += f"\n    {place(item)}: {item['location']['code']}"
    if item.get("fix"):
        text += f"\n    Fix: {item['fix']}"
    return text


def _seed(config: pytest.Config) -> int:
    from grader.config import seed_from_environment

    try:
        return seed_from_environment(config.getoption("attention_seed"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    option = _setting(config, "attention_submission")
    if not option:
        return
    from grader import registry
    from grader.pipeline import grade

    path = Path(option).resolve()
    if not path.is_file():
        raise pytest.UsageError(f"--attention-submission: {option} is not a file")
    assignment = _setting(config, "attention_assignment")
    if assignment is not None and not registry.exists(assignment):
        raise pytest.UsageError(
            f"--attention-assignment: {registry.unknown_assignment(assignment)}")
    report = grade(path, assignment=assignment, seed=_seed(config))
    config.stash[REPORT] = report
    submission = SubmissionFile.from_parent(session, path=path, report=report)
    items.extend(submission.collect())


def pytest_report_header(config: pytest.Config) -> str | None:
    option = _setting(config, "attention_submission")
    return f"attention-grader: grading {option}" if option else None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    report = config.stash.get(REPORT, None)
    if report is None:
        return
    from grader.render import text

    terminalreporter.section("attention-grader feedback")
    terminalreporter.write(text.render(report))
