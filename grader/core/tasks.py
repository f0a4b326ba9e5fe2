"""The tasks an assignment is graded on, one record each with everything numeric that is specific
to it: the reference, the pipeline of (possibly wrong) choices that the misconception catalogue's
variants plug into, the probes, the concept checks, and the sizes its evidence sentences quote.

An assignment (``grader.registry``) names its task; a course's own assignment reuses a task as it
is. A new task is a new record here, plus the catalogue rows that apply to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

import reference
from grader.core import concepts, probes
from grader.core.concepts import Concept
from grader.model import Array, Probe
from reference import variants

Outputs = tuple[Array, "Array | None"]
Recipe = Mapping[str, str]


@dataclass(frozen=True)
class Task:
    name: str
    reference: Callable[..., Outputs]
    #: ``pipeline(recipe, *args, record=None)``: the computation with the recipe's wrong
    #: choices (its intermediate values put in ``record``, a dict, when given)
    pipeline: Callable[..., Outputs]
    make_probes: Callable[[probes.Maker], list[Probe]]
    concepts: tuple[Concept, ...]
    #: the values an evidence sentence may quote, for one probe and the recipe that explains it
    evidence_fields: Callable[[Probe, Recipe], dict[str, object]]


def _softmax_reference(x: Array, axis: int = -1) -> Outputs:
    return reference.softmax(x, axis), None


def _softmax_pipeline(recipe: Recipe, x: Array, axis: int = -1,
                      record: variants.Stages | None = None) -> Outputs:
    return variants.softmax(recipe, x, axis, record), None


def _multi_head_reference(*args: Any) -> Outputs:
    return reference.multi_head_attention(*args), None


def _softmax_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    x = probe.args[0]
    return {"axis": probe.args[1] if len(probe.args) > 1 else -1, "big": "1e4",
            "n": x.shape[0], "m": x.shape[-1], "batched_shape": str(x.shape)}


def _sizes(q: Array, d_k: int, d_v: int, n: int, m: int, heads: int,
           d_model: int, recipe: Recipe) -> dict[str, object]:
    dims = variants.Dims(n=n, m=m, d_k=d_k, d_v=d_v, k_shape0=m, k_shape1=d_k,
                         d_model=d_model, num_heads=heads)
    factor = variants.SCALE[recipe.get("scale", variants.CORRECT["scale"])](dims)
    return {
        "weights_sum": f"{factor:.4g}",
        "d_k": d_k, "sqrt_dk": f"{np.sqrt(d_k):.4g}", "inv_sqrt_dk": f"{1 / np.sqrt(d_k):.4g}",
        "d_v": d_v, "sqrt_dv": f"{np.sqrt(d_v):.4g}", "n": n, "m": m,
        "d_model": d_model, "sqrt_dmodel": f"{np.sqrt(d_model):.4g}", "h": heads,
        "sqrt_h": f"{np.sqrt(heads):.4g}", "big": "1e4", "axis": -1,
        "batched_shape": str(tuple(q.shape)),
    }


def _attention_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    q, k, v = probe.args[:3]
    d_k = q.shape[-1]
    return _sizes(q, d_k, v.shape[-1], q.shape[-2], k.shape[-2], 1, d_k, recipe)


_MATRIX_NAMES = {"q": "W_q", "k": "W_k", "v": "W_v", "-": "no matrix"}


def _multi_head_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    q, k = probe.args[0], probe.args[1]
    d_model, heads = q.shape[-1], probe.args[6]
    d_k = d_model // heads
    projection = ", ".join(f"{role} from {_MATRIX_NAMES[c]}"
                           for role, c in zip("QKV", recipe.get("proj_matrices", "qkv")))
    return {**_sizes(q, d_k, d_k, q.shape[-2], k.shape[-2], heads, d_model, recipe),
            "projection": projection}


TASKS: Mapping[str, Task] = {
    task.name: task for task in (
        Task("softmax", _softmax_reference, _softmax_pipeline, probes.softmax_probes,
             concepts.SOFTMAX_CONCEPTS, _softmax_fields),
        Task("attention", reference.scaled_dot_product_attention, variants.attention,
             probes.attention_probes, concepts.ATTENTION_CONCEPTS, _attention_fields),
        Task("multi_head_attention", _multi_head_reference, variants.multi_head_attention,
             probes.multi_head_probes, concepts.MULTI_HEAD_CONCEPTS, _multi_head_fields),
    )
}


def build_probes(task: str, seed: int) -> list[Probe]:
    """The probes of ``task``; the same seed always gives the same probes (each knows it)."""
    made = TASKS[task].make_probes(probes.Maker(seed, task))
    return [dataclasses.replace(p, meta={**p.meta, "seed": seed}) for p in made]


def probe_inputs(task: str, probe_id: str, seed: int = 0) -> tuple[Any, ...]:
    """The arguments of one test input, fresh copies (what a report's reproducing call uses)."""
    import numpy as np

    for probe in build_probes(task, seed):
        if probe.id == probe_id:
            copies: dict[int, Any] = {}
            for value in probe.args:
                if isinstance(value, np.ndarray) and id(value) not in copies:
                    copies[id(value)] = value.copy()
            return tuple(copies.get(id(v), v) for v in probe.args)
    raise KeyError(f"no test input {probe_id!r} in {task!r}")
