"""Reports short enough to read, and as short under hidden tests (issue 34, item 4): what to
fix first in at most ``FIRST_PART_WORDS`` words per mistake, at most ``MAX_LINES`` lines in a
text report and a median of at most ``MEDIAN_LINES``, nothing repeated, no placeholder, no
array written out where a hidden test input's name and shapes serve; the rest folded away in
HTML and in the notebook. ``bench/report_lengths.py`` prints the same measures over every
fixture. Word and line budgets only: nothing here is timed."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader.notebook import MORE, Feedback, grade_function
from grader.render import html, length, text
from grader.render.visible import student_view

from .conftest import SUBMISSIONS, gradable

Graded = Callable[..., dict[str, Any]]

ALL = sorted(SUBMISSIONS.rglob("*.py"))
HIDDEN_SEED = 3


def _id(path: Path) -> str:
    return str(path.relative_to(SUBMISSIONS).with_suffix(""))


@pytest.mark.parametrize("seed", [0, HIDDEN_SEED])
@pytest.mark.parametrize("path", ALL, ids=[_id(p) for p in ALL])
def test_each_text_report_keeps_the_budget(path: Path, seed: int, graded: Graded) -> None:
    """At most 80 lines, at most 160 words per mistake before the details, no prose line
    twice, no placeholder: on the public probes and on hidden ones alike."""
    report = graded(path, seed=seed)
    for shown in (report, student_view(report)):  # (the student's view under hidden tests)
        measured = length.measure(shown)
        assert not length.over_budget(measured), length.over_budget(measured)


@pytest.mark.breadth  # (a second grading of every fixture, at the hidden seed)
@pytest.mark.parametrize("path", ALL, ids=[_id(p) for p in ALL])
def test_a_hidden_tests_report_is_as_long_as_the_self_checks(path: Path,
                                                             graded: Graded) -> None:
    """No full arrays under hidden tests: a reproducing call names the hidden test input and
    its shapes, so the report is no longer than the self-check's (give or take a line the
    other values of the probes change)."""
    public, hidden = graded(path), graded(path, seed=HIDDEN_SEED)
    assert length.measure(hidden).lines <= length.measure(public).lines + 4
    for item in hidden["misconceptions"]:
        assert "np.array(" not in item["evidence"], item["evidence"]


@pytest.mark.breadth  # (every fixture)
def test_the_median_report_is_short(graded: Graded) -> None:
    lines = [length.measure(graded(path)).lines for path in ALL if gradable(path)]
    assert statistics.median(lines) <= length.MEDIAN_LINES
    assert max(lines) <= length.MAX_LINES


def test_the_text_report_gives_each_check_one_line(graded: Graded) -> None:
    report = graded(SUBMISSIONS / "attention" / "combo_dk_inverted.py")
    shown = text.render(report).split("\nChecks\n")[1].splitlines()
    assert len(shown) == len(report["checks"])
    assert all(len(line) <= 96 for line in shown)
    assert [line.split()[1] for line in shown] == [c["id"] for c in report["checks"]]


def test_the_first_part_says_the_fix_once(graded: Graded) -> None:
    """A literal fix or else the sentence: never both (a sentence beside a literal fix
    repeated it, or contradicted it: "Keep that line" followed by other advice)."""
    for path in sorted((SUBMISSIONS / "attention").glob("*.py")):
        report = graded(path)
        blocks = length.first_part_blocks(text.summary(report))
        for block, item in zip(blocks, report["misconceptions"]):
            literal = any(line.strip().startswith(("Change that line", "Keep that line"))
                          for line in block)
            said = any(line.strip().startswith("Fix:") for line in block)
            assert literal != said or not item.get("fix"), "\n".join(block)


def _student() -> Callable[..., Any]:
    import numpy as np

    def scaled_dot_product_attention(Q: Any, K: Any, V: Any, mask: Any = None) -> Any:
        scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return (weights / weights.sum(axis=-1, keepdims=True)) @ V

    return scaled_dot_product_attention


def test_the_notebook_shows_the_first_part_unless_asked() -> None:
    """``check()``'s text is what to fix, and a line saying how to see the rest; its HTML
    folds the rest in a closed ``<details>``; ``details=True`` shows it all."""
    report = grade_function(_student(), "attention")
    short = Feedback(report)
    assert "What to fix" in str(short) and MORE in str(short)
    assert "\nChecks\n" not in str(short) and "Evidence:" not in str(short)
    assert str(short).startswith("\n".join(text.summary(report)).rstrip())
    page = short._repr_html_()
    first, folded = page.split("<details>", 1)
    assert "What to fix" in first and "<h4>Checks</h4>" in folded and "Evidence:" in folded
    full = short.with_details()
    assert str(full) == text.render(report) and "<details open>" in full._repr_html_()


def test_html_folds_everything_after_the_first_part() -> None:
    report = grade_function(_student(), "attention")
    page = html.render(report)
    assert page.count("<details>") == 1
    assert "<table>" not in page.split("<details>")[0]
