"""Every fixture submission gets exactly the misconceptions it is written to show.

The fixtures are student-style code in several styles (tests/submissions/<assignment>/); each
names its expected IDs in its first line. Correct styles must get full marks and no accusation.
Their reports come from the session's ``graded`` (see conftest.py), on the public seed and on
hidden ones; one batch on a hidden seed runs through the sandbox (``e2e``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader import registry
from reference.catalogue import BY_ID, CATALOGUE
from reference.rows import backward, causal_and_positions, tiled

from .conftest import SUBMISSIONS, declared_failures, expected_ids

Graded = Callable[..., dict[str, Any]]

FIXTURES = sorted(SUBMISSIONS.glob("*/*.py"))


@pytest.mark.parametrize("path", FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES])
def test_fixture_gets_exactly_its_misconceptions(path: Path, graded: Graded) -> None:
    report = graded(path)  # (schema-checked)
    expected = expected_ids(path)
    assert sorted(m["id"] for m in report["misconceptions"]) == expected, report["errors"]
    assert report["status"] == "graded", report["errors"]
    if expected:
        assert report["score"] < report["max_score"]
        for item in report["misconceptions"]:
            assert item["evidence"]
            # (the row's items, or those it cites in this task instead)
            assert item["question_bank"] == list(BY_ID[item["id"]].question_bank_in.get(
                f"task:{path.parent.name}", BY_ID[item["id"]].question_bank))
    else:
        failed = {c["id"]: c for c in report["checks"] if not c["passed"]}
        # an exact computation that never tiles loses the tiling check and nothing else
        allowed = set(declared_failures(path))
        assert set(failed) == allowed, [c["message"] for c in failed.values()]
        lost = sum(c["max_points"] for c in failed.values())
        assert report["score"] == pytest.approx(report["max_score"] - lost)


def test_every_catalogued_misconception_has_a_fixture() -> None:
    shown = {i for path in FIXTURES for i in expected_ids(path)}
    assert {row.id for row in CATALOGUE} <= shown


def test_every_assignment_has_at_least_five_correct_styles() -> None:
    """At least five correct fixtures per assignment, no two the same code once comments and
    blank lines are left out (the notebook and torch styles in test_styles.py come on top)."""
    for assignment in ("softmax", "attention", "multi_head_attention", "causal_mask",
                       "positional_encoding", "rope", "causal_self_attention",
                       "flash_attention_forward", "softmax_backward",
                       "attention_backward", "flash_attention_backward",
                       "multi_head_attention_backward"):
        correct = [p for p in FIXTURES if p.parent.name == assignment and not expected_ids(p)]
        assert len(correct) >= 5, assignment
        bodies = {"\n".join(line.split("#")[0].strip() for line in p.read_text().splitlines()
                            if line.split("#")[0].strip()) for p in correct}
        assert len(bodies) == len(correct), assignment


def test_evidence_names_the_numbers_and_a_call_to_paste(graded: Graded) -> None:
    report = graded(SUBMISSIONS / "attention" / "scale_by_dk.py")
    evidence = report["misconceptions"][0]["evidence"]
    assert "divided by d_k = " in evidence and "sqrt(d_k) = " in evidence
    assert "scaled_dot_product_attention(Q, K, V" in evidence
    # (a public test input of more than a few numbers is fetched by name, not pasted)
    assert "probe_inputs('attention', " in evidence or "import numpy as np" in evidence


#: the plain assignments' fixtures (a course's own are graded on a hidden seed by its tests)
ASSIGNMENT_FIXTURES = [p for p in FIXTURES if p.parent.name in registry.builtins()]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("path", ASSIGNMENT_FIXTURES,
                         ids=[f"{p.parent.name}/{p.stem}" for p in ASSIGNMENT_FIXTURES])
def test_hidden_seeds_change_no_verdict(path: Path, seed: int, graded: Graded) -> None:
    """New probe values (a hidden seed) must neither accuse a correct style nor hide a
    misconception: every fixture again gets exactly its IDs, correct ones full marks but for
    the checks they are written to fail."""
    report = graded(path, seed=seed)
    expected = expected_ids(path)
    assert sorted(m["id"] for m in report["misconceptions"]) == expected, report["errors"]
    if not expected:
        failed = sorted(c["id"] for c in report["checks"] if not c["passed"])
        assert failed == declared_failures(path), report["errors"]


@pytest.mark.e2e  # a batch: child processes
def test_a_batch_on_a_hidden_seed_gives_each_fixture_its_verdict(tmp_path: Path,
                                                                 graded: Graded) -> None:
    """A batch run on a hidden seed gives each submission the verdict that grading it alone
    on that seed gives (test_hidden_seeds_change_no_verdict checks those for every fixture)."""
    from grader.batch import Entry, run_batch

    fixtures = [p for p in ASSIGNMENT_FIXTURES if p.parent.name == "attention"][::6]
    result = run_batch([Entry(p.stem, (p,)) for p in fixtures], "attention", tmp_path, jobs=2,
                       seed=2)
    for path, row in zip(fixtures, result.rows):
        alone = graded(path, seed=2)
        assert sorted(row["misconceptions"]) == sorted(
            m["id"] for m in alone["misconceptions"]), (path.name, row)
        assert row["score"] == alone["score"], (path.name, row)


@pytest.mark.parametrize("seed", [0, 3])
def test_code_right_wherever_it_runs_is_accused_of_nothing(seed: int, graded: Graded) -> None:
    """Masking not written yet (every masked call raises): the crashes cost points and are
    reported, with every test input they hit; no misconception is named, not even
    no-batch-support (the batched calls that ran are right)."""
    path = SUBMISSIONS / "partial" / "attention" / "correct_but_masks_todo.py"
    report = graded(path, "attention", seed=seed)  # (schema-checked)
    assert report["misconceptions"] == []
    assert report["score"] < report["max_score"]
    [error] = report["errors"]
    assert error["kind"] == "runtime-error" and "masked" in error["message"]


def test_every_id_of_the_rest_of_the_unit_is_named_by_three_styles() -> None:
    """Each ID of the causal mask, the encodings and causal self-attention is named exactly by
    at least three fixtures written in different styles (folder-wide, combinations included)."""
    unit = {row.id for row in causal_and_positions.ROWS}
    named: dict[str, int] = {}
    for path in FIXTURES:
        for misconception in expected_ids(path):
            named[misconception] = named.get(misconception, 0) + 1
    thin = {i: named.get(i, 0) for i in unit if named.get(i, 0) < 3}
    assert not thin, thin


def test_every_id_of_tiled_attention_is_named_by_three_styles() -> None:
    """Each tiled-attention ID, and each ID it carries over, is named exactly by at least three
    fixtures of the tiled forward written in different styles (query tiles outside, key tiles
    outside, precomputed tile lists with diag(alpha) @ O), combinations included; and at least
    six correct styles are accused of nothing (checked by the tests above)."""
    ids = {row.id for row in tiled.ROWS} | set(tiled.CARRIED)
    named: dict[str, int] = {}
    for path in FIXTURES:
        if path.parent.name == "flash_attention_forward":
            for misconception in expected_ids(path):
                named[misconception] = named.get(misconception, 0) + 1
    thin = {i: named.get(i, 0) for i in ids if named.get(i, 0) < 3}
    assert not thin, thin
    correct = [p for p in FIXTURES if p.parent.name == "flash_attention_forward"
               and not expected_ids(p)]
    assert len(correct) >= 6


def test_every_id_of_the_backward_pass_is_named_by_three_styles() -> None:
    """Each backward ID is named exactly by at least three fixtures of the backward
    assignments, written in different styles (combinations included)."""
    folders = {"softmax_backward", "attention_backward", "multi_head_attention_backward"}
    unit = {row.id for row in backward.ROWS}
    named: dict[str, int] = {}
    for path in FIXTURES:
        if path.parent.name in folders:
            for misconception in expected_ids(path):
                named[misconception] = named.get(misconception, 0) + 1
    thin = {i: named.get(i, 0) for i in unit if named.get(i, 0) < 3}
    assert not thin, thin


def test_every_id_of_the_tiled_backward_is_named_by_three_styles() -> None:
    """Each ID of the tiled backward, and each ID it shares or carries over, is named exactly by
    at least three of its fixtures written in different styles (key tiles outside, query tiles
    outside, precomputed tile lists with einsum), combinations included; and the correct styles
    (those three, untiled, float32, a two-pass D, torch) are accused of nothing (tests above)."""
    ids = {row.id for row in tiled.BACKWARD_ROWS} | set(tiled.CARRIED_BACKWARD) | {
        "remainder-tile-dropped", "causal-mask-tile-local"}
    named: dict[str, int] = {}
    for path in FIXTURES:
        if path.parent.name == "flash_attention_backward":
            for misconception in expected_ids(path):
                named[misconception] = named.get(misconception, 0) + 1
    thin = {i: named.get(i, 0) for i in ids if named.get(i, 0) < 3}
    assert not thin, thin
    correct = [p for p in FIXTURES if p.parent.name == "flash_attention_backward"
               and not expected_ids(p)]
    assert len(correct) >= 6
