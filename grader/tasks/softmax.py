"""The ``softmax`` task: its probes, its conceptual checks and how its evidence is told.

A new task is a module like this one (``TASK``), its reference and pipeline in
``reference/tasks/``, its catalogue rows, its built-in assignment folder and its fixtures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.core.concepts import (
    ATOL,
    Concept,
    Outcomes,
    Verdict,
    close,
    finite_for_large,
    output_of,
)
from grader.core.probes import STABILITY_OFFSET, UNDERFLOW_OFFSETS, Maker, new_probe
from grader.core.tasks import Recipe, Task
from grader.model import Probe
from grader.registry import Interface
from reference.tasks import softmax


def make_probes(make: Maker) -> list[Probe]:
    matrix = make.grid(3, 4)
    big = make.grid(3, 4) + STABILITY_OFFSET + np.array([[0.0], [2.0], [-3.0]])
    spread = make.grid(3, 4) + np.array(UNDERFLOW_OFFSETS)[:, None]
    constant_row = make.grid(3, 4)
    constant_row[1] = 0.7
    return [
        new_probe("vector", (make.grid(5),), "unbatched", bank=("B-2",)),
        new_probe("matrix", (matrix,), "unbatched", bank=("B-2", "B-13"), repeat=True),
        new_probe("matrix-axis0", (make.grid(3, 4), 0), "unbatched", "axis", bank=("B-2",),
                  traced=True),
        new_probe("tensor", (make.grid(2, 3, 4),), "batched", bank=("B-20",)),
        new_probe("tensor-axis1", (make.grid(2, 3, 4), 1), "batched", "axis", bank=("B-20",),
                  traced=True),
        new_probe("tensor-axis0", (make.grid(2, 3, 4), 0), "batched", "axis", bank=("B-20",)),
        new_probe("large-logits", (big,), "unbatched", "large", bank=("B-10", "A-edge-2")),
        new_probe("far-apart-rows", (spread,), "unbatched", "large", bank=("B-10",)),
        new_probe("shifted", (matrix + 100.0,), "unbatched", "concept", bank=("B-10",)),
        new_probe("uniform-row", (constant_row,), "unbatched", "concept", bank=("A-edge-5", "B-24")),
        new_probe("single-entry", (make.grid(3, 1),), "unbatched", "concept", bank=("B-26",)),
    ]


def _softmax_sums(r: Outcomes) -> Verdict:
    for probe_id in ("matrix", "matrix-axis0", "tensor-axis1"):
        probe = r[probe_id][0]
        out = output_of(r, probe_id)
        axis = probe.args[1] if len(probe.args) > 1 else -1
        if out.shape != probe.args[0].shape or not np.allclose(out.sum(axis=axis), 1.0,
                                                               atol=1e-3) or out.min() < -ATOL:
            return False, (f"on test input '{probe_id}' the slices along axis={axis} should be "
                           "non-negative and sum to 1.")
    return True, "the slices along the requested axis are distributions."


def _softmax_shift(r: Outcomes) -> Verdict:
    ok = close(output_of(r, "matrix"), output_of(r, "shifted"), 1e-6)
    return ok, ("adding 100 to every entry leaves the softmax unchanged." if ok else
                "softmax is shift-invariant: softmax(x + 100) must equal softmax(x).")


def _softmax_uniform(r: Outcomes) -> Verdict:
    out = output_of(r, "uniform-row")
    ok = out.shape == (3, 4) and close(out[1], np.full(4, 0.25))
    return ok, ("a row of equal entries gives uniform weights 1/4." if ok else
                "a row of equal entries must give uniform weights (0.25 each here).")


def _softmax_single(r: Outcomes) -> Verdict:
    out = output_of(r, "single-entry")
    ok = close(out, np.ones((3, 1)))
    return ok, ("a slice of length 1 gets weight 1." if ok else
                "a slice with a single entry must get weight exactly 1.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("sums-to-one", "Each slice along the axis is a distribution", ("A-tf-2", "B-2"),
            ("matrix", "matrix-axis0", "tensor-axis1"), _softmax_sums),
    Concept("shift-invariance", "Softmax is shift-invariant", ("B-10",),
            ("matrix", "shifted"), _softmax_shift),
    Concept("uniform-for-equal-scores", "Equal entries give uniform weights",
            ("A-edge-5", "B-24"), ("uniform-row",), _softmax_uniform),
    Concept("single-entry", "A single entry gets weight 1", ("B-26",), ("single-entry",),
            _softmax_single),
    Concept("large-logits-finite", "Large inputs give finite results", ("B-10", "A-edge-2"),
            ("large-logits",), finite_for_large),
)


def _softmax_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    x = probe.args[0]
    return {"axis": probe.args[1] if len(probe.args) > 1 else -1, "big": "1e4",
            "n": x.shape[0], "m": x.shape[-1], "batched_shape": str(x.shape)}


def unexpressible(interface: Interface, canonical: dict[str, Any],
                  parameters: tuple[str, ...]) -> str | None:
    """A softmax over an axis the course's code cannot be given (nor fixed to)."""
    if "axis" in canonical and canonical["axis"] not in (-1, canonical["x"].ndim - 1) and \
            not (interface.receives("axis") or "axis" in parameters) and \
            interface.axis is None and not interface.ndim:
        return "the interface takes no axis"
    return None


TASK = Task("softmax", softmax.reference, softmax.pipeline, make_probes, CONCEPTS,
            _softmax_fields, unexpressible=unexpressible, softmax_alone=True)
