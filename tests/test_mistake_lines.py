"""The line that holds the mistake, and the follow-up reports (issue 34, items 2 and 3).

Each fixture is graded as ``grade`` grades it (``graded``: in this process unless
``--fixture-grading=sandbox``); the last test runs ``attention-grader check`` on two of them.
The quoted lines themselves are pinned by the fixtures' ``# where:`` lines
(``test_feedback.py::test_report_quotes_the_line_of_each_mistake``); these tests hold what the
report says about them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader.render import text
from reference import edits

from .conftest import SUBMISSIONS

Graded = Callable[..., dict[str, Any]]
e2e = pytest.mark.e2e


def _finding(report: dict[str, Any], misconception: str) -> dict[str, Any]:
    [found] = [m for m in report["misconceptions"] if m["id"] == misconception]
    return found


def _line(path: Path, number: int) -> str:
    return path.read_text().splitlines()[number - 1].strip()


# --- item 2: the line that holds the mistake ----------------------------------------------------

MASK_POSITIONS = [("sees_next_positions_line", "causal-mask-sees-next", "one more than"),
                  ("blocks_self_key_positions_line", "causal-mask-blocks-self", "one more than"),
                  ("top_left_positions_line", "causal-mask-top-left", "from 0")]


@pytest.mark.parametrize(("name", "misconception", "said"), MASK_POSITIONS,
                         ids=[m[0] for m in MASK_POSITIONS])
def test_a_mask_built_by_comparing_positions_is_told_at_its_shifted_positions(
        name: str, misconception: str, said: str, graded: Graded) -> None:
    path = SUBMISSIONS / "causal_mask" / f"{name}.py"
    finding = _finding(graded(path), misconception)
    location = finding["location"]
    assert not location["code"].startswith("return")
    assert "positions the mask compares" in location["computes"]
    assert said in finding["fix"] and "tril" not in finding["fix"].split("`np.arange")[0]


@pytest.mark.parametrize("name", ["correct_compare_shifted_strict", "correct_compare_key_offset"])
def test_a_right_mask_of_shifted_positions_is_accused_of_nothing(name: str,
                                                                 graded: Graded) -> None:
    report = graded(SUBMISSIONS / "causal_mask" / f"{name}.py")
    assert report["misconceptions"] == [] and report["score"] == report["max_score"]


@pytest.mark.parametrize("name", ["reversed_complex_factor", "reversed_polar_torch",
                                  "reversed_complex"])
def test_a_complex_ropes_wrong_sign_is_told_at_its_factor_in_complex_terms(
        name: str, graded: Graded) -> None:
    path = SUBMISSIONS / "rope" / f"{name}.py"
    report = graded(path)
    finding = _finding(report, "rope-rotation-reversed")
    location = finding["location"]
    assert "-1j" in location["code"] or "-angles" in location["code"]
    assert location["checked"] and "-1j" not in location["fixed"] and "-angles" not in \
        location["fixed"]
    told = " ".join([finding["fix"], finding["evidence"], finding["explanation"]]).lower()
    assert "exp(-i a)" in finding["fix"] and "sine terms" not in finding["evidence"].lower()
    assert "x1 * cos - x2 * sin" not in finding["fix"] and "sin" in told  # (the explanation)


@pytest.mark.parametrize("name", ["correct_complex_factor", "correct_polar_torch",
                                  "correct_repeat_interleave_torch", "correct_loops_any_batch"])
def test_right_ropes_in_these_styles_are_accused_of_nothing(name: str, graded: Graded) -> None:
    report = graded(SUBMISSIONS / "rope" / f"{name}.py")
    assert report["misconceptions"] == [] and report["score"] == report["max_score"]


def test_the_sign_rewrite_leaves_code_of_sines_alone() -> None:
    context = edits.Context(False, "output", "numpy", {})
    assert edits.positive_angle("out[..., 1::2] = x2 * cos - x1 * sin", context) is None
    assert edits.positive_angle("z = z * np.exp(-1j * ang)", context) == "z = z * np.exp(1j * ang)"


@pytest.mark.parametrize("folder,name", [("attention", "mask_ignored_bias_dropped"),
                                         ("causal_self_attention",
                                          "mask_missing_bias_dropped_numpy")])
def test_a_mask_bias_written_and_dropped_is_quoted_where_it_is_added(
        folder: str, name: str, graded: Graded) -> None:
    report = graded(SUBMISSIONS / folder / f"{name}.py")
    [finding] = report["misconceptions"]
    location = finding["location"]
    assert "+" in location["code"] and "scaled" not in location["computes"]
    assert location["checked"] and location["fixed"].endswith(location["code"])


ROPE_FIXTURES = sorted([*(SUBMISSIONS / "rope").glob("*.py"),
                        *(SUBMISSIONS / "causal_self_attention").glob("*rope*.py")])


@pytest.mark.parametrize("path", ROPE_FIXTURES, ids=[p.stem for p in ROPE_FIXTURES])
def test_a_rope_line_is_told_as_the_rotation_never_as_the_split(path: Path,
                                                               graded: Graded) -> None:
    for finding in graded(path, path.parent.name)["misconceptions"]:
        if finding["id"].startswith("rope-") and finding.get("location"):
            computes = finding["location"]["computes"]
            assert "split into heads" not in computes and "projected" not in computes, finding


DOUBLED = [("halves_cat_freqs_torch", 11), ("halves_partner_repeat_interleave_torch", 16),
           ("halves_rotate_half", 15)]


@pytest.mark.parametrize(("name", "table"), DOUBLED, ids=[d[0] for d in DOUBLED])
def test_a_rotate_half_table_is_told_with_the_return_line_and_the_results(
        name: str, table: int, graded: Graded) -> None:
    path = SUBMISSIONS / "rope" / f"{name}.py"
    finding = _finding(graded(path), "rope-halves-not-interleaved")
    assert finding["location"]["code"].startswith("return")
    assert f"Line {table}, `{_line(path, table)}`" in finding["fix"]
    assert "`x1 * cos - x2 * sin`" in finding["fix"] and "`x1 * sin + x2 * cos`" in finding["fix"]


# --- item 3: follow-up reports ------------------------------------------------------------------

def test_a_2d_output_array_is_named_where_it_is_made(graded: Graded) -> None:
    path = SUBMISSIONS / "rope" / "no_batch_output_made_2d_loops.py"
    report = graded(path)
    [finding] = report["misconceptions"]
    assert finding["id"] == "no-batch-support"
    assert finding["location"]["code"] == "out = np.zeros((n, d))"
    assert finding["location"]["checked"] and finding["location"]["fixed"] == \
        "out = np.zeros_like(x)"
    assert "last two axes, whatever" not in finding["fix"] and "line 15" in finding["fix"]
    told = finding["explanation"] + finding["fix"]
    assert "K.T" not in told and "shape[1]" not in told


def test_rope_and_mask_reports_carry_no_advice_of_attentions_k_t(graded: Graded) -> None:
    paths = [*(SUBMISSIONS / "rope").glob("*.py"), *(SUBMISSIONS / "causal_mask").glob("*.py"),
             *(SUBMISSIONS / "partial" / "rope").glob("*.py")]
    for path in paths:
        shown = text.render(graded(path, path.parent.name))
        assert "K.T" not in shown and "shape[1]" not in shown, path.name


RAISES = [("rope", "positions_reshaped_raises", 16, ["(4, 1, 4, 4)", "(4, 4)", "`cos` (line 14"]),
          ("multi_head_attention", "reshape_to_d_model_raises", 9,
           ["48 values", "(4, 2, 12)", "holds 96", "`X_q` has shape (4, 12)"]),
          ("causal_self_attention", "mask_shape_torch_raises", 15,
           ["8 against 3", "`bias` (line 14)"])]


@pytest.mark.parametrize(("folder", "name", "line", "said"), RAISES, ids=[r[1] for r in RAISES])
def test_code_that_now_raises_gets_a_diagnosis_of_its_shapes(
        folder: str, name: str, line: int, said: list[str], graded: Graded) -> None:
    path = SUBMISSIONS / "partial" / folder / f"{name}.py"
    report = graded(path, folder)
    assert report["misconceptions"] == []  # (no-batch-support neither: 2-D calls raise too)
    located = report["located"]
    assert located["stage"] == "error" and located["location"]["line"] == line
    assert located["location"]["code"] == _line(path, line)
    for words in said:
        assert words in located["message"], (words, located["message"])
    assert "Where it first goes wrong" in text.render(report)


@e2e
@pytest.mark.parametrize(("path", "said"), [
    (SUBMISSIONS / "rope" / "no_batch_output_made_2d_loops.py", "out = np.zeros_like(x)"),
    (SUBMISSIONS / "partial" / "rope" / "positions_reshaped_raises.py", "(4, 1, 4, 4)"),
    (SUBMISSIONS / "causal_mask" / "sees_next_positions_line.py", "one more than it is"),
])
def test_check_tells_it(path: Path, said: str) -> None:
    shown = subprocess.run([sys.executable, "-m", "grader", "check", str(path),
                            "--assignment", path.parent.name],
                           capture_output=True, text=True, check=False).stdout
    assert said in " ".join(shown.split()), shown
