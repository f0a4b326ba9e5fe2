"""The backward pass (SPEC section 1, "The backward pass"): the references agree with finite
differences, the concept checks tell right from wrong, forward and backward mistakes compose,
and a file defining a backward beside its forward is graded as the backward. Fast tier: every
grading here is in-process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from grader import registry
from grader.core.assignments import Assignment, get
from grader.core.tasks import build_probes
from grader.notebook import grade_function
from reference.tasks.attention import scaled_dot_product_attention
from reference.tasks.attention_backward import attention_backward
from reference.tasks.softmax import softmax
from reference.tasks.softmax_backward import softmax_backward

BACKWARD = ("softmax_backward", "attention_backward")


def _directional(loss: Callable[..., float], inputs: tuple[Any, ...],
                 grads: tuple[Any, ...], rng: np.random.Generator) -> tuple[float, float]:
    directions = [rng.normal(size=x.shape) for x in inputs]
    step = 1e-6
    plus = loss(*(x + step * d for x, d in zip(inputs, directions)))
    minus = loss(*(x - step * d for x, d in zip(inputs, directions)))
    return (plus - minus) / (2 * step), sum(float(np.sum(g * d))
                                            for g, d in zip(grads, directions))


@pytest.mark.parametrize("seed", [0, 5])
def test_attention_backward_reference_agrees_with_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for probe in build_probes("attention_backward", seed):
        d_o, q, k, v, *mask = probe.args
        if "large" in probe.tags:
            continue
        grads = attention_backward(d_o, q, k, v, *mask)
        for grad, argument in zip(grads, (q, k, v)):
            assert grad.shape == argument.shape, probe.id
        numeric, analytic = _directional(
            lambda a, b, c, m=mask, up=d_o: float(
                np.sum(scaled_dot_product_attention(a, b, c, *m)[0] * up)),
            (q, k, v), grads, rng)
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric)), probe.id


@pytest.mark.parametrize("seed", [0, 5])
def test_softmax_backward_reference_agrees_with_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for probe in build_probes("softmax_backward", seed):
        d_y, y, *rest = probe.args
        axis = rest[0] if rest else -1
        logits = np.log(y)
        numeric, analytic = _directional(lambda x, a=axis, up=d_y: float(np.sum(softmax(x, a) * up)),
                                         (logits,), (softmax_backward(d_y, y, axis),), rng)
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric)), probe.id


def _student(assignment: Assignment, recipe: dict[str, str]) -> Callable[..., Any]:
    def function(*args: Any) -> Any:
        returned = assignment.variant(recipe, *args)
        return returned[0] if len(returned) == 1 else returned

    function.__name__ = assignment.function
    return function


@pytest.mark.parametrize("assignment_id", BACKWARD)
@pytest.mark.parametrize("seed", [0, 2])
def test_the_reference_passes_every_concept_check(assignment_id: str, seed: int) -> None:
    report = grade_function(_student(get(assignment_id), {}), assignment_id, seed=seed)
    assert report["misconceptions"] == []
    assert report["score"] == report["max_score"], [
        c["message"] for c in report["checks"] if not c["passed"]]


@pytest.mark.parametrize("assignment_id,recipe,failed", [
    ("attention_backward", {"mask": "zero_fill_textbook"}, "blocked-key-zero-gradient"),
    ("attention_backward", {"mask": "zero_fill"}, "blocked-key-zero-gradient"),
    ("attention_backward", {"dsoftmax": "diagonal"}, "finite-differences"),
    ("attention_backward", {"backward_scale": "none"}, "finite-differences"),
    ("attention_backward", {"values": "k"}, "gradient-shapes"),
    ("softmax_backward", {"dsoftmax": "diagonal"}, "constant-upstream-zero"),
    ("softmax_backward", {"rowsum_weight": "plain"}, "gradient-slices-sum-to-zero"),
    ("softmax_backward", {"dsoftmax": "elementwise"}, "finite-differences"),
])
def test_a_concept_check_catches_what_it_is_about(assignment_id: str, recipe: dict[str, str],
                                                  failed: str) -> None:
    report = grade_function(_student(get(assignment_id), recipe), assignment_id)
    assert failed in {c["id"] for c in report["checks"] if not c["passed"]}


@pytest.mark.parametrize("recipe,named", [
    # a forward over d_k is the exact gradient of that forward: one ID
    ({"scale": "dk"}, ["scale-by-dk"]),
    # ... and with unscaled dQ, dK it is both
    ({"scale": "dk", "backward_scale": "none"}, ["backward-missing-scale", "scale-by-dk"]),
    ({"dv_product": "plain", "dk_product": "plain"}, ["dk-not-transposed", "dv-not-transposed"]),
    ({"rowsum_weight": "plain", "rowsum_axis": "other"},
     ["softmax-backward-unweighted-sum", "softmax-backward-wrong-axis"]),
    ({"mask": "inverted", "dsoftmax": "diagonal"},
     ["mask-inverted", "softmax-backward-diagonal-only"]),
])
def test_forward_and_backward_mistakes_compose(recipe: dict[str, str], named: list[str]) -> None:
    report = grade_function(_student(get("attention_backward"), recipe), "attention_backward")
    assert sorted(m["id"] for m in report["misconceptions"]) == named


def test_the_evidence_names_the_gradient_and_the_line_of_the_term() -> None:
    report = grade_function(_student(get("attention_backward"), {"dv_product": "plain"}),
                            "attention_backward")
    [finding] = report["misconceptions"]
    assert "In dV at index" in finding["evidence"]
    assert "n = m" in finding["evidence"]


def test_a_file_with_a_backward_and_its_forward_is_graded_as_the_backward() -> None:
    assert registry.infer({"scaled_dot_product_attention", "attention_backward"}) == \
        "attention_backward"
    assert registry.infer({"softmax", "softmax_backward"}) == "softmax_backward"
    assert registry.infer({"softmax_backward", "attention_backward"}) == "attention_backward"
