"""The multi-head attention backward (SPEC section 1, "The backward pass"): the reference agrees
with finite differences, the probes break the coincidences, the concept checks tell right from
wrong, forward and backward mistakes compose, the evidence names the gradient and the term,
and the task grades as a part beside its forward. Fast tier: every grading here is
in-process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import registry
from grader.core.assignments import get
from grader.core.report import validate
from grader.core.tasks import build_probes
from grader.notebook import grade_function, grade_parts
from reference.tasks.multi_head_attention import multi_head_attention
from reference.tasks.multi_head_attention_backward import multi_head_attention_backward

TASK = "multi_head_attention_backward"
SUBMISSIONS = Path(__file__).parent / "submissions"


@pytest.mark.parametrize("seed", [0, 5])
def test_the_reference_agrees_with_finite_differences(seed: int) -> None:
    """All six arguments moved together along a random direction (X_q and X_kv separately,
    even where the probe passes one array twice)."""
    rng = np.random.default_rng(seed)
    for probe in build_probes(TASK, seed):
        if "large" in probe.tags:
            continue
        d_y, x_q, x_kv, *weights = probe.args[:7]
        heads, mask = probe.args[7], probe.args[8:]
        inputs = (x_q, x_kv.copy(), *weights)
        grads = multi_head_attention_backward(d_y, *inputs, heads, *mask)
        for grad, argument in zip(grads, inputs):
            assert grad.shape == argument.shape, probe.id
        directions = [rng.normal(size=x.shape) for x in inputs]

        def loss(t: float, up: Any = d_y, h: int = heads, m: Any = mask,
                 at: Any = inputs, along: Any = directions) -> float:
            moved = [x + t * d for x, d in zip(at, along)]
            return float(np.sum(multi_head_attention(*moved, h, *m) * up))

        numeric = (loss(1e-6) - loss(-1e-6)) / 2e-6
        analytic = sum(float(np.sum(g * d)) for g, d in zip(grads, directions))
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric)), probe.id


def test_the_probes_break_the_coincidences() -> None:
    probes = build_probes(TASK, 0)
    lengths = {(p.args[1].shape[-2], p.args[2].shape[-2]) for p in probes}
    assert any(n != m for n, m in lengths) and any(n == m for n, m in lengths)
    assert any(p.args[1] is p.args[2] for p in probes)  # the same array as X_q and X_kv
    assert any(p.args[1] is not p.args[2] and p.args[1].shape == p.args[2].shape
               for p in probes)
    assert {p.args[7] for p in probes} >= {2, 3}
    assert all(p.args[1].shape[-1] // p.args[7] >= 2 for p in probes)  # d_k >= 2
    for probe in probes:
        for weight in probe.args[3:7]:
            if not np.array_equal(weight, np.eye(len(weight))):
                assert not np.allclose(weight, weight.T), probe.id
        upstream = probe.args[0]
        assert np.ptp(upstream) > 0, probe.id
    blocked = [p for p in probes if len(p.args) > 8 and (~p.args[8].any(axis=-2)).any()]
    assert blocked
    assert any(p.args[1].ndim > 2 for p in probes)


def _student(recipe: dict[str, str]) -> Callable[..., Any]:
    assignment = get(TASK)

    def multi_head_attention_backward(*args: Any) -> Any:
        return assignment.variant(recipe, *args)

    return multi_head_attention_backward


@pytest.mark.parametrize("seed", [0, 2])
def test_the_reference_passes_every_concept_check(seed: int) -> None:
    report = grade_function(_student({}), TASK, seed=seed)
    assert report["misconceptions"] == []
    assert report["score"] == report["max_score"], [
        c["message"] for c in report["checks"] if not c["passed"]]


def _dw_v_scaled_by_w_v(*args: Any) -> Any:
    grads = list(get(TASK).variant({}, *args))
    grads[4] = grads[4] * float(np.abs(args[5]).sum()) / 50.0
    return tuple(grads)


@pytest.mark.parametrize("function,failed", [
    (_student({"mask": "zero_fill_textbook"}), "blocked-key-zero-gradient"),
    (_student({"mask": "after_softmax"}), "blocked-key-zero-gradient"),
    # (no recipe explains it: the search tries all 39,060 triples, 8 s, so not in the fast tier)
    pytest.param(_dw_v_scaled_by_w_v, "dw-v-from-weights-only", marks=pytest.mark.breadth),
    (_student({"dsoftmax": "diagonal"}), "finite-differences"),
    (_student({"weight_grad": "transposed_o"}), "finite-differences"),
    (_student({"dx_paths": "merged"}), "self-attention-total"),
    (_student({"dxkv_path": "v_only"}), "self-attention-total"),
    (_student({"dx_paths": "merged"}), "gradient-shapes"),
])
def test_a_concept_check_catches_what_it_is_about(function: Callable[..., Any],
                                                  failed: str) -> None:
    function.__name__ = TASK
    report = grade_function(function, TASK)
    assert failed in {c["id"] for c in report["checks"] if not c["passed"]}


@pytest.mark.parametrize("recipe,named", [
    # a forward over d_k is the exact gradient of that forward: one ID ...
    ({"scale": "dk"}, ["scale-by-dk"]),
    # ... and with unscaled dQ, dK it is both
    ({"scale": "dk", "backward_scale": "none"}, ["backward-missing-scale", "scale-by-dk"]),
    # plain reshapes in both passes are the forward's IDs, not backward-heads-not-transposed
    ({"split": "reshape", "merge": "reshape"},
     ["merge-without-transpose", "split-without-transpose"]),
    ({"split": "reshape", "merge": "reshape", "backward_heads": "reshape_both"},
     ["merge-without-transpose", "split-without-transpose"]),
    # the whole linear backward transposed is both
    ({"weight_grad": "transposed", "dx_weight": "plain"},
     ["dx-weight-not-transposed", "weight-grad-transposed"]),
    # nn.Linear's layout differentiated exactly is one ID
    ({"projection": "transposed"}, ["projection-transposed"]),
    ({"backward_heads": "reshape_merge", "scale": "dk"},
     ["backward-heads-not-transposed", "scale-by-dk"]),
    ({"mask": "inverted", "dsoftmax": "diagonal"},
     ["mask-inverted", "softmax-backward-diagonal-only"]),
    ({"dv_product": "plain", "dk_product": "plain"}, ["dk-not-transposed", "dv-not-transposed"]),
    ({"rowsum_axis": "no_keepdims_per_slice"}, ["row-sum-misbroadcast"]),
    ({"kv_source": "x_q"}, ["kv-from-query-input"]),
    ({"kv_source": "x_q", "dxkv_path": "k_only"}, ["dxkv-missing-path", "kv-from-query-input"]),
])
def test_forward_and_backward_mistakes_compose(recipe: dict[str, str], named: list[str]) -> None:
    report = grade_function(_student(recipe), TASK)
    assert sorted(m["id"] for m in report["misconceptions"]) == named


@pytest.mark.parametrize("recipe,gradient,words", [
    ({"weight_grad": "transposed_o"}, "dW_o", "your dW_o equal dY^T X"),
    ({"weight_grad": "transposed_qkv"}, "dW_", "your dW_q, dW_k and dW_v equal dY^T X"),
    ({"dx_weight": "plain_o"}, "dX_", "your gradient through W_o equals dY W"),
    ({"dxkv_path": "v_only"}, "dX_kv", "the K path (dK W_k^T) is missing"),
    ({"backward_heads": "reshape_split"}, "d", "splits dC into heads by a plain reshape"),
])
def test_the_evidence_names_the_gradient_and_the_term(recipe: dict[str, str], gradient: str,
                                                      words: str) -> None:
    report = grade_function(_student(recipe), TASK)
    [finding] = report["misconceptions"]
    assert f"In {gradient}" in finding["evidence"] and words in finding["evidence"]


def test_a_file_with_the_backward_and_its_forward_is_graded_as_the_backward() -> None:
    assert registry.infer({"multi_head_attention", TASK}) == TASK
    assert registry.infer({"attention_backward", TASK}) == TASK
    assert registry.infer({"multi_head_attention", "attention_backward", TASK,
                           "scaled_dot_product_attention"}) == TASK


def test_the_forward_and_its_backward_grade_as_two_parts(tmp_path: Path) -> None:
    """A course folder whose parts are multi_head_attention and its backward, checked in a
    notebook's kernel: each part graded, the backward's mistake named in its part."""
    folder = tmp_path / "unit"
    folder.mkdir()
    (folder / "assignment.toml").write_text(
        'id = "mha-both-ways"\nkind = "course"\n'
        '[[parts]]\nassignment = "multi_head_attention"\nweight = 4\n'
        f'[[parts]]\nassignment = "{TASK}"\nweight = 6\n')
    namespace: dict[str, Any] = {}
    for source in ("multi_head_attention/correct_split_merge.py",
                   f"{TASK}/weight_grad_transposed_helper.py"):
        exec(compile((SUBMISSIONS / source).read_text(), str(SUBMISSIONS / source), "exec"),
             namespace)
    report = grade_parts(namespace, str(folder))
    validate(report)
    forward, backward = report["parts"]
    assert forward["score"] == forward["max_score"] == 4.0
    assert [m["id"] for m in backward["misconceptions"]] == ["weight-grad-transposed"]
    assert 0 < backward["score"] < backward["max_score"] == 6.0
