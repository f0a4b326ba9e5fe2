"""Interface options for code as real courses hand it out (issue 33, item 4): an encoding table
whose padding row is zeroed (``padding_row``), a softmax that takes at least a matrix
(``min_ndim``), the TensorFlow tutorial's (1, position, d_model) float32 encoding, and the CS336
presets' float32 inputs with one batch axis. Course folders under ``tests/courses/`` hold their
own fixtures, written in the course's style (first line ``# expect: ...``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader import grade, registry
from grader.core.report import validate

from .conftest import SUBMISSIONS, expected_ids

Graded = Callable[..., dict[str, Any]]

COURSES = Path(__file__).parent / "courses"
COURSE_FIXTURES = sorted(COURSES.glob("*/*.py"))
PRESETS = SUBMISSIONS / "presets"


@pytest.mark.parametrize("path", COURSE_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_course_folder_fixture_is_graded_as_its_course_expects(path: Path,
                                                                graded: Graded) -> None:
    report = graded(path, str(path.parent))
    assert sorted(m["id"] for m in report["misconceptions"]) == expected_ids(path)
    if not expected_ids(path):
        assert report["score"] == report["max_score"] == 10 and report["errors"] == []
    else:
        assert report["score"] < report["max_score"]


def test_each_course_folder_has_correct_and_buggy_fixtures() -> None:
    for folder in {p.parent for p in COURSE_FIXTURES}:
        fixtures = sorted(folder.glob("*.py"))
        correct = [f for f in fixtures if not expected_ids(f)]
        assert len(correct) >= 3 and len(fixtures) - len(correct) >= 2, folder


def test_a_softmax_that_refuses_vectors_fails_without_min_ndim(graded: Graded) -> None:
    """The option is what makes the difference: graded as SPEC's softmax, the 1-D test input
    is the code's own error."""
    path = COURSES / "at-least-2d-softmax" / "correct_keras_style.py"
    report = graded(path, "softmax")
    assert report["score"] < report["max_score"]
    assert [e["kind"] for e in report["errors"]] == ["runtime-error"]
    assert "1D" in report["errors"][0]["message"]


def test_a_zeroed_padding_row_costs_marks_only_where_the_interface_does_not_say_it(
        graded: Graded) -> None:
    path = PRESETS / "aiayn-pytorch-sinusoid-table" / "correct_jadore.py"
    pytest.importorskip("torch")
    assert graded(path)["score"] == 10
    info = registry.get("aiayn-pytorch-sinusoid-table")
    assert info.interface.padding_row == 0
    assert dict(info.interface.constants) == {"padding_idx": 0}


PADDED_COURSE = """\
id = "padded-table"
task = "positional_encoding"
function = "sinusoid_table"
signature = "sinusoid_table(n_position, d_hid, padding_idx=None)"
arguments = ["n_position", "d_hid", "padding_idx"]
summary = "A sinusoid table with a padding row."

[interface]
parameters = ["n_positions", "d_model"]
constants = { padding_idx = PAD }
padding_row = PAD
"""

PADDED_TABLE = """\
import numpy as np


def sinusoid_table(n_position, d_hid, padding_idx=None):
    pos = np.arange(n_position)[:, None]
    j = np.arange(d_hid)[None, :]
    angles = pos / np.power(10000, 2 * (j // 2) / d_hid)
    table = np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
    if padding_idx is not None:
        table[padding_idx] = 0.0
    return table
"""


@pytest.mark.parametrize("row", [0, 2])
@pytest.mark.parametrize("change,expected", [
    (None, []),
    (("(j // 2)", "j"), ["pe-exponent-uses-feature"]),
    (("np.sin(angles), np.cos(angles)", "np.cos(angles), np.sin(angles)"),
     ["pe-sin-cos-swapped"]),
])
def test_a_declared_padding_row_is_left_out_and_the_other_rows_still_checked(
        tmp_path: Path, graded: Graded, row: int, change: tuple[str, str] | None,
        expected: list[str]) -> None:
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "assignment.toml").write_text(PADDED_COURSE.replace("PAD", str(row)))
    source = PADDED_TABLE if change is None else PADDED_TABLE.replace(*change)
    assert change is None or source != PADDED_TABLE
    (tmp_path / "table.py").write_text(source)
    report = graded(tmp_path / "table.py", str(tmp_path / "course"))
    assert sorted(m["id"] for m in report["misconceptions"]) == expected
    assert (report["score"] == report["max_score"] == 10) == (not expected)
    assert report["errors"] == []  # (a table too short for the row is never asked for)


def test_the_tf_tutorials_leading_axis_is_read_through_squeeze(tmp_path: Path,
                                                               graded: Graded) -> None:
    """Without `squeeze = 1` the tutorial's (1, position, d_model) answer is the wrong shape;
    with it, the 2019 [sin | cos] code is named pe-not-interleaved."""
    folder = PRESETS / "tf-tutorial-positional-encoding"
    concatenated = folder / "concat_sines_cosines_2019.py"
    [finding] = graded(concatenated)["misconceptions"]
    assert finding["id"] == "pe-not-interleaved"
    text = (Path(str(registry.get("tf-tutorial-positional-encoding").folder)) / "assignment.toml"
            ).read_text().replace("squeeze = 1\n", "").replace('kind = "preset"', 'kind = "course"')
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "assignment.toml").write_text(text)
    report = graded(folder / "correct_tutorial_in_place.py", str(tmp_path / "course"))
    assert "wrong-shape" in [e["kind"] for e in report["errors"]]


@pytest.mark.parametrize("preset,batch", [
    ("cs336-softmax", "any"), ("cs336-attention", "any"), ("cs336-rope", "one"),
    ("cs336-causal-self-attention-rope", "one"),
])
def test_cs336_presets_say_what_cs336_hands_out(preset: str, batch: str) -> None:
    info = registry.get(preset)
    assert info.interface.dtype == "float32" and info.interface.batch == batch
    assert any("float32" in c for c in info.conventions)


@pytest.mark.parametrize("key,value,named", [
    ("min_ndim", "2", "min_ndim is for the softmax task"),
    ("padding_row", "-1", "padding_row = -1 must be 0 or more"),
    ("padding_rows", "0", "unknown key 'padding_rows'"),
    ("padding_row", "true", "padding_row in [interface] must be a whole number"),
])
def test_the_new_keys_are_checked_by_name_on_an_encoding(tmp_path: Path, key: str, value: str,
                                                         named: str) -> None:
    text = PADDED_COURSE.replace("padding_row = PAD", f"{key} = {value}").replace("PAD", "0")
    (tmp_path / "assignment.toml").write_text(text)
    with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
        registry.get(str(tmp_path))


@pytest.mark.parametrize("extra,named", [
    ("padding_row = 0", "padding_row is the index .* for the positional_encoding task"),
    ("min_ndim = 3", "min_ndim = 3; it is 2"),
    ("min_ndim = 2\nndim = 2", "min_ndim and ndim = 2 together"),
])
def test_the_new_keys_are_checked_by_name_on_a_softmax(tmp_path: Path, extra: str,
                                                       named: str) -> None:
    text = (COURSES / "at-least-2d-softmax" / "assignment.toml").read_text().replace(
        "min_ndim = 2", extra)
    (tmp_path / "assignment.toml").write_text(text)
    with pytest.raises(ValueError, match=named):
        registry.get(str(tmp_path))


@pytest.mark.e2e
@pytest.mark.parametrize("path,assignment", [
    (COURSES / "at-least-2d-softmax" / "correct_keras_style.py",
     str(COURSES / "at-least-2d-softmax")),
    (PRESETS / "tf-tutorial-positional-encoding" / "correct_tutorial_in_place.py",
     "tf-tutorial-positional-encoding"),
])
def test_the_options_hold_through_the_sandbox(path: Path, assignment: str) -> None:
    """The child's side of the options (a vector lifted to a row, the leading axis taken off)
    as ``grader.grade`` runs the code: isolated."""
    report = grade(path, assignment=assignment)
    validate(report)
    assert report["score"] == report["max_score"] == 10 and report["misconceptions"] == []
