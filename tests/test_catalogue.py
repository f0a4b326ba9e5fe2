"""The catalogue is the single table of misconceptions and agrees with SPEC section 2."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import reference
from grader import registry
from grader.core.assignments import get
from grader.core.tasks import build_probes
from reference import catalogue, stages

SPEC_IDS = {
    "scale-by-dk", "no-scaling", "scale-multiplied", "scale-by-dv", "scale-after-softmax",
    "softmax-over-queries", "softmax-global", "sum-normalization", "missing-normalization",
    "unstable-softmax", "softmax-global-max", "softmax-wrong-axis", "blend-keys",
    "scores-transposed", "mask-after-softmax", "mask-zero-fill", "mask-inverted", "mask-ignored",
    "scale-by-dmodel", "heads-not-split", "split-without-transpose", "missing-output-projection",
    "wrong-projection", "projection-transposed", "key-not-transposed", "scale-by-seq-len",
    "mask-transposed", "mask-as-additive-bias", "scale-by-num-heads", "merge-without-transpose",
    "kv-from-query-input", "mask-misbroadcast", "mutates-input", "no-batch-support",
    # the rest of the attention unit
    "causal-mask-inverted", "causal-mask-transposed", "causal-mask-blocks-self",
    "causal-mask-sees-next", "causal-mask-top-left", "causal-mask-missing", "pe-sin-cos-swapped",
    "pe-not-interleaved", "pe-exponent-uses-feature", "pe-exponent-missing-two",
    "pe-frequency-inverted", "pe-positions-from-one", "rope-halves-not-interleaved",
    "rope-rotation-reversed", "rope-frequency-missing-two", "rope-positions-ignored",
    "rope-no-rotation-partner", "rope-on-values", "rope-before-head-split",
    # tiled attention
    "online-output-not-rescaled", "online-rescale-inverted", "online-sum-not-rescaled",
    "tile-local-softmax", "missing-final-division", "lse-max-only", "lse-missing-max",
    "lse-missing-scale", "finite-initial-max", "remainder-tile-dropped",
    "causal-mask-tile-local", "backward-missing-d", "backward-p-unscaled",
    "backward-grad-unscaled",
    # the backward pass
    "softmax-backward-diagonal-only", "softmax-backward-elementwise",
    "softmax-backward-unweighted-sum", "softmax-backward-wrong-axis", "row-sum-misbroadcast",
    "dv-not-transposed", "dk-not-transposed", "backward-missing-scale", "backward-scale-by-dk",
    "softmax-backward-output-as-logits", "weight-grad-transposed", "dx-weight-not-transposed",
    "backward-heads-not-transposed", "dxkv-missing-path", "dx-paths-merged",
}
BANK_ID = re.compile(r"^(A-(tf|err|why|edge)-\d+|B-\d+)$")


def test_ids_are_exactly_the_spec_ids() -> None:
    ids = [row.id for row in catalogue.CATALOGUE]
    assert len(ids) == len(set(ids)) == len(SPEC_IDS)
    assert set(ids) == SPEC_IDS


@pytest.mark.parametrize("row", catalogue.CATALOGUE, ids=lambda r: r.id)
def test_each_row_is_complete(row: catalogue.Misconception) -> None:
    assert row.title and len(row.explanation) > 80
    assert all(BANK_ID.match(item) for item in row.question_bank)
    assert row.variants or row.detector in {"input-mutation", "batch"}
    for variant in row.variants:
        assert variant.knob in stages.CORRECT
        assert variant.choice != stages.CORRECT[variant.knob]


@pytest.mark.parametrize("assignment", list(registry.builtins()))
def test_empty_recipe_is_the_reference(assignment: str) -> None:
    spec = get(assignment)
    for probe in spec.probes():
        for expected, got in zip(spec.reference(*probe.args), spec.variant({}, *probe.args)):
            if expected is not None:
                np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12,
                                           err_msg=probe.id)


@pytest.mark.parametrize("assignment", list(registry.builtins()))
def test_every_single_variant_differs_from_the_reference_on_some_probe(assignment: str) -> None:
    spec = get(assignment)
    probes = spec.probes()
    for knob, choice in catalogue.deviations(spec.task.name):
        differs = False
        for probe in probes:
            try:
                outputs = spec.variant({knob: choice}, *probe.args)
            except ValueError:
                continue
            # every output the task diagnoses (a backward mistake may move dV alone)
            for got, expected, name in zip(outputs, spec.reference(*probe.args), spec.outputs):
                if name not in spec.diagnosed_outputs or expected is None or got is None:
                    continue
                if got.shape != expected.shape or not np.allclose(got, expected,
                                                                  equal_nan=False):
                    differs = True
            if differs:
                break
        assert differs, (knob, choice)


def test_probes_are_deterministic_and_seeded() -> None:
    first, again = build_probes("attention", 0), build_probes("attention", 0)
    other = build_probes("attention", 12345)
    for a, b, c in zip(first, again, other):
        for x, y in zip(a.args, b.args):
            if isinstance(x, np.ndarray):
                assert np.array_equal(x, y)
        assert a.id == c.id
    assert not np.array_equal(first[0].args[0], other[0].args[0])


def test_reference_matches_a_plain_loop() -> None:
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    out, weights = reference.scaled_dot_product_attention(q, k, v)
    for i in range(3):
        s = np.array([q[i] @ k[j] / 2.0 for j in range(5)])
        w = np.exp(s) / np.exp(s).sum()
        np.testing.assert_allclose(weights[i], w)
        np.testing.assert_allclose(out[i], w @ v)


QUESTION_BANK_INDEX = Path(__file__).parents[2] / "shared" / "question-bank" / "INDEX.md"


@pytest.mark.parametrize("row", catalogue.CATALOGUE, ids=lambda r: r.id)
def test_each_row_says_how_to_fix_it_and_where_to_look(row: catalogue.Misconception) -> None:
    from grader.core.locate import stage_words
    from reference.question_bank import ITEMS

    for fix in [row.fix, *(told.fix for told in row.in_conventions.values())]:
        assert fix.endswith(".") and 20 < len(fix) <= 160 and "{" not in fix, fix
    assert set(row.stages) <= set(stage_words()), row.stages
    assert bool(row.stages) == (row.detector == "variant"), "located unless found another way"
    assert all(item in ITEMS for item in row.question_bank)
    assert all(item in ITEMS for items in row.question_bank_in.values() for item in items)


def test_every_stage_a_row_names_is_one_its_tasks_compute() -> None:
    from grader.core.tasks import tasks

    computed: dict[str, set[str]] = {}
    for task in tasks().values():
        computed[task.name] = set()
        for probe in (p for p in build_probes(task.name, 0) if p.traced):
            record: dict = {}
            task.pipeline({}, *probe.args, record=record)
            computed[task.name] |= set(record)
    for row in catalogue.CATALOGUE:
        tasks = {t for v in row.variants for t in v.tasks}
        for stage in row.stages:
            assert any(stage in computed[t] for t in tasks), (row.id, stage)


def test_every_bank_item_has_a_plain_summary() -> None:
    from reference.question_bank import ITEMS

    if QUESTION_BANK_INDEX.exists():  # the bank sits beside the repository in development
        listed = set(re.findall(r"^\| (A-(?:tf|err|why|edge)-\d+|B-\d+) \|",
                                QUESTION_BANK_INDEX.read_text(), re.M))
        assert listed == set(ITEMS)
    assert all(BANK_ID.match(item) and 10 < len(text) <= 90 for item, text in ITEMS.items())


def test_the_contract_document_names_every_id_and_error_kind() -> None:
    """CONTRACT.md is the project's own contract: every misconception ID, every assignment and
    every error kind of the report's schema is in it."""
    from pathlib import Path

    from grader import registry
    from grader.core.report import schema

    contract = (Path(__file__).parents[1] / "CONTRACT.md").read_text()
    for row in catalogue.CATALOGUE:
        assert f"`{row.id}`" in contract, row.id
    for assignment in registry.builtins():
        assert f"`{assignment}`" in contract, assignment
    error = schema()["properties"]["errors"]["items"]["properties"]["kind"]["enum"]
    for kind in error:
        assert f"`{kind}`" in contract, kind


def test_every_stage_a_row_points_at_has_words() -> None:
    """A report says which value the quoted line computes: every stage a row may quote, or fix
    again on another line, has its words."""
    from grader.core.locate import stage_words

    for row in catalogue.CATALOGUE:
        assert set(row.stages) | set(row.also) <= set(stage_words()), row.id


def test_a_file_of_several_unit_functions_is_graded_as_the_most_advanced() -> None:
    assert registry.infer({"causal_mask", "causal_self_attention"}) == "causal_self_attention"
    assert registry.infer({"softmax", "causal_mask"}) == "causal_mask"
    assert registry.infer({"positional_encoding", "scaled_dot_product_attention"}) == "attention"
    assert registry.infer({"rope", "multi_head_attention"}) == "multi_head_attention"


@pytest.mark.parametrize("assignment_id", registry.one_part_ids())
def test_every_interface_has_a_traced_call_of_each_kind_it_can_express(assignment_id: str) -> None:
    """A line is quoted only from a traced call: a course whose interface cannot take the
    usual traced inputs (no axis, self-attention only, masks as lengths) gets traced inputs it
    can take, masked and not, so that its findings get lines too."""
    probes = get(assignment_id).probes(0)
    for masked in (False, True):
        ordinary = [p for p in probes if ("masked" in p.tags) == masked and not p.batched
                    and not p.tags & {"large", "concept", "no-diagnosis"}]
        if ordinary:
            assert any(p.traced for p in probes if ("masked" in p.tags) == masked), masked
