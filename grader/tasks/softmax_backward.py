"""The ``softmax_backward`` task (the gradient of a softmax along any axis, given its output):
its probes, its conceptual checks and how its evidence is told.

The upstream gradients are random and non-uniform (an all-ones one makes the right answer 0,
which ``np.zeros_like`` also returns); axes other than the last, 1-D and 3-D or 4-D inputs, and
square slices where a row sum without ``keepdims`` broadcasts all run.
"""

from __future__ import annotations

import numpy as np

from grader.core.concepts import ATOL, Concept, Outcomes, Verdict
from grader.core.probes import Maker, new_probe
from grader.core.tasks import Recipe, Task
from grader.model import Array, Probe
from grader.tasks.attention_backward import directional_check
from reference.tasks import softmax_backward as softmax_backward_ref
from reference.tasks.softmax import softmax


def make_probes(make: Maker) -> list[Probe]:
    def call(*shape: int, axis: int = -1, upstream: Array | None = None) -> tuple[object, ...]:
        y = softmax(make.grid(*shape) * 1.5, axis)
        d_y = make.grid(*shape) if upstream is None else upstream
        return (d_y, y) if axis == -1 else (d_y, y, axis)

    constant = np.repeat(make.grid(3, 1), 4, axis=1)
    return [
        new_probe("vector", call(5), "unbatched", bank=("B-2",)),
        new_probe("matrix", call(3, 4), "unbatched", bank=("B-2", "B-13"), repeat=True,
                  traced=True),
        new_probe("square", call(4, 4), "unbatched", "coincidence", bank=("B-2",),
                  traced=True),
        new_probe("matrix-axis0", call(3, 4, axis=0), "unbatched", "axis", bank=("B-2",),
                  traced=True),
        new_probe("square-axis0", call(4, 4, axis=0), "unbatched", "axis", "coincidence",
                  bank=("B-2",)),
        new_probe("tensor", call(2, 3, 4), "batched", bank=("B-20",)),
        new_probe("tensor-axis1", call(2, 3, 4, axis=1), "batched", "axis", bank=("B-20",)),
        new_probe("tensor-axis0", call(2, 3, 4, axis=0), "batched", "axis", bank=("B-20",)),
        new_probe("tensor-axis-2", call(2, 3, 5, axis=-2), "batched", "axis", bank=("B-20",)),
        new_probe("tensor4-axis2", call(2, 3, 4, 5, axis=2), "batched", "axis",
                  bank=("B-20",)),
        new_probe("constant-upstream", call(3, 4, upstream=constant), "unbatched", "concept",
                  "no-diagnosis", bank=("B-10",)),
        new_probe("ones-upstream", call(2, 3, 4, axis=1, upstream=np.ones((2, 3, 4))),
                  "batched", "concept", "no-diagnosis", bank=("B-10",)),
    ]


def _axis(probe: Probe) -> int:
    return int(probe.args[2]) if len(probe.args) > 2 else -1


def _gradient(r: Outcomes, probe_id: str) -> Array | None:
    value = r[probe_id][1].output
    return None if value is None else np.asarray(value, dtype=np.float64)


def _slices_sum_to_zero(r: Outcomes) -> Verdict:
    for probe_id in ("matrix", "matrix-axis0", "tensor-axis1"):
        probe = r[probe_id][0]
        grad, axis = _gradient(r, probe_id), _axis(probe)
        if grad is None or grad.shape != probe.args[1].shape:
            return False, f"on test input '{probe_id}' the gradient should have the shape of Y."
        sums = grad.sum(axis=axis)
        if not np.all(np.abs(sums) <= ATOL):
            return False, (f"on test input '{probe_id}' the slices of your gradient along "
                           f"axis={axis} sum to {np.round(sums, 4).tolist()}; a softmax's "
                           "outputs always sum to 1, so no change of x moves that sum and each "
                           "slice of dL/dx sums to 0.")
    return True, "each slice of the gradient sums to zero along the softmax's axis."


def _constant_upstream_zero(r: Outcomes) -> Verdict:
    for probe_id in ("constant-upstream", "ones-upstream"):
        grad = _gradient(r, probe_id)
        if grad is None or not np.all(np.abs(grad) <= ATOL):
            largest = "none" if grad is None else f"{np.abs(grad).max():.4g}"
            return False, (f"on test input '{probe_id}' grad_output is constant along the "
                           "axis; softmax is shift-invariant, so the gradient must be exactly "
                           f"0 (largest entry of yours: {largest}).")
    return True, "an upstream gradient constant along the axis gives a zero gradient."


def _finite_differences(r: Outcomes) -> Verdict:
    for probe_id in ("matrix", "tensor-axis1"):
        probe = r[probe_id][0]
        d_y, y = probe.args[:2]
        axis = _axis(probe)
        logits = np.log(y)  # softmax(log Y) = Y: the logits up to a constant per slice
        ok, message = directional_check(lambda x, a=axis: softmax(x, a), (logits,),
                                        (_gradient(r, probe_id),), d_y,
                                        int(probe.meta.get("seed", 0)))
        if not ok:
            return False, f"on test input '{probe_id}' {message.replace('O *', 'Y *')}"
    return True, ("the gradient agrees with finite differences of L = sum(Y * grad_output) "
                  "along a random direction.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("gradient-slices-sum-to-zero", "Each slice of the gradient sums to zero",
            ("A-tf-2", "B-2"), ("matrix", "matrix-axis0", "tensor-axis1"), _slices_sum_to_zero),
    Concept("constant-upstream-zero", "A constant upstream gradient gives zero",
            ("B-10",), ("constant-upstream", "ones-upstream"), _constant_upstream_zero),
    Concept("finite-differences", "The gradient agrees with finite differences",
            ("B-17",), ("matrix", "tensor-axis1"), _finite_differences),
)


def _fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    y = probe.args[1]
    return {"axis": _axis(probe), "n": y.shape[0], "m": y.shape[-1],
            "batched_shape": str(y.shape), "big": "1e4"}


STAGE_WORDS = {"probabilities": "softmax applied to the given output"}

TASK = Task("softmax_backward", softmax_backward_ref.reference,
            softmax_backward_ref.pipeline, make_probes, CONCEPTS, _fields,
            stage_words=STAGE_WORDS)
