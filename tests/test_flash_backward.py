"""The tiled backward (SPEC section 1, "Tiled attention"): its references (plain and tiled)
agree with each other, with attention_backward's gradients and with finite differences on every
probe; its concept checks tell right from wrong; its own IDs and the ones it carries compose
into the fewest that explain. Fast tier: every grading here is in-process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from grader import registry
from grader.core.assignments import Assignment, get
from grader.core.tasks import build_probes
from grader.notebook import grade_function
from reference.tasks.attention_backward import attention_backward
from reference.tasks.causal_mask import causal_mask
from reference.tasks.flash_attention_backward import (
    flash_attention_backward,
    flash_attention_backward_tiled,
)
from reference.tasks.flash_attention_forward import flash_attention_forward

TASK = "flash_attention_backward"


def _calls(seed: int) -> list[tuple[str, tuple[Any, ...], bool]]:
    out = []
    for probe in build_probes(TASK, seed):
        extra = probe.args[6:]
        out.append((probe.id, probe.args, bool(extra[0]) if extra else False))
    return out


@pytest.mark.parametrize("seed", [0, 4])
def test_the_plain_and_the_tiled_reference_agree_with_attention_backward(seed: int) -> None:
    for probe_id, args, causal in _calls(seed):
        d_o, q, k, v = args[:4]
        plain = flash_attention_backward(*args)
        tiled = flash_attention_backward_tiled(*args)
        mask = causal_mask(q.shape[-2], k.shape[-2]) if causal else None
        textbook = attention_backward(d_o, q, k, v, mask)
        for a, b, c, argument in zip(plain, tiled, textbook, (q, k, v)):
            assert a.shape == b.shape == argument.shape, probe_id
            scale = max(1.0, float(np.abs(c).max()))
            assert np.abs(a - b).max() <= 1e-9 * scale, probe_id
            assert np.abs(a - c).max() <= 1e-9 * scale, probe_id


@pytest.mark.parametrize("seed", [0, 4])
def test_the_reference_agrees_with_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    step = 1e-6
    for probe_id, args, causal in _calls(seed):
        if probe_id == "large-logits":
            continue
        d_o, q, k, v = args[:4]
        grads = flash_attention_backward(*args)
        directions = [rng.normal(size=x.shape) for x in (q, k, v)]

        def loss(t: float, inputs: tuple[Any, ...] = (q, k, v), along: list[Any] = directions,
                 masked: bool = causal, upstream: Any = d_o) -> float:
            moved = [x + t * d for x, d in zip(inputs, along)]
            a, b, c = moved
            return float(np.sum(flash_attention_forward(a, b, c, masked)[0] * upstream))

        numeric = (loss(step) - loss(-step)) / (2 * step)
        analytic = sum(float(np.sum(g * d)) for g, d in zip(grads, directions))
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric)), probe_id


def test_every_probe_hands_in_the_reference_forward_and_a_random_upstream_gradient() -> None:
    for probe_id, args, causal in _calls(0):
        d_o, q, k, v, out, lse = args[:6]
        want_o, want_l = flash_attention_forward(q, k, v, causal)
        assert np.array_equal(out, want_o) and np.array_equal(lse, want_l), probe_id
        assert not np.allclose(d_o, d_o.flat[0]), probe_id  # never constant (never ones)


def _student(assignment: Assignment, recipe: dict[str, str]) -> Callable[..., Any]:
    def function(*args: Any) -> Any:
        return assignment.variant(recipe, *args)

    function.__name__ = assignment.function
    return function


@pytest.mark.parametrize("seed", [0, 2])
def test_the_reference_gets_every_output_point(seed: int) -> None:
    report = grade_function(_student(get(TASK), {}), TASK, seed=seed)
    assert report["misconceptions"] == []
    # (the pipeline computes whole matrices: exact, and it loses the tiling check alone)
    failed = [c["id"] for c in report["checks"] if not c["passed"]]
    assert failed == ["tiling"]
    assert report["score"] == report["max_score"] - 1.0


@pytest.mark.parametrize("recipe,failed", [
    ({"flash_d": "missing"}, "finite-differences"),
    ({"flash_grad_scale": "none"}, "finite-differences"),
    ({"flash_remainder": "keys"}, "tiles-change-nothing"),
])
def test_a_concept_check_catches_what_it_is_about(recipe: dict[str, str], failed: str) -> None:
    report = grade_function(_student(get(TASK), recipe), TASK)
    assert failed in {c["id"] for c in report["checks"] if not c["passed"]}


@pytest.mark.parametrize("recipe,named", [
    ({"flash_d": "missing"}, ["backward-missing-d"]),
    ({"flash_p_scale": "unscaled"}, ["backward-p-unscaled"]),
    ({"flash_grad_scale": "none"}, ["backward-grad-unscaled"]),
    # P and the gradients both unscaled compute exactly no-scaling: that is the name
    ({"flash_p_scale": "unscaled", "flash_grad_scale": "none"}, ["no-scaling"]),
    ({"scale": "dk", "flash_d": "missing"}, ["backward-missing-d", "scale-by-dk"]),
    ({"flash_mask_tiles": "tile_local", "mask_align": "top_left"},
     ["causal-mask-tile-local", "causal-mask-top-left"]),
    ({"flash_remainder": "both", "flash_grad_scale": "none"},
     ["backward-grad-unscaled", "remainder-tile-dropped"]),
    ({"causal": "missing"}, ["causal-mask-missing"]),
])
def test_the_tiled_backward_ids_compose(recipe: dict[str, str], named: list[str]) -> None:
    report = grade_function(_student(get(TASK), recipe), TASK)
    assert sorted(m["id"] for m in report["misconceptions"]) == named
    for finding in report["misconceptions"]:
        assert finding["evidence"]


def test_a_file_with_the_tiled_backward_and_its_forward_is_graded_as_the_backward() -> None:
    assert registry.infer({"flash_attention_forward", "flash_attention_backward"}) == TASK


def test_an_l_with_a_trailing_axis_is_a_wrong_shape_for_l_alone(graded: Any) -> None:
    """SPEC: an L of shape (..., n, 1) is a wrong-shape error for L, not a misconception; O is
    still graded (every value check passes on O)."""
    from .conftest import SUBMISSIONS

    report = graded(SUBMISSIONS / "flash_attention_forward" / "correct_lse_trailing_axis.py")
    assert report["misconceptions"] == []
    [error] = report["errors"]
    assert error["kind"] == "wrong-shape" and "L has shape (5, 1)" in error["message"]
    failed = [c["id"] for c in report["checks"] if not c["passed"]]
    assert failed == ["lse-per-query"]
    assert all(c["passed"] for c in report["checks"] if c["id"].startswith("values-"))
