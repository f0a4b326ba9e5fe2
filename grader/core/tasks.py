"""The tasks an assignment is graded on, one record each with everything numeric that is specific
to it: the reference, the pipeline of (possibly wrong) choices that the misconception catalogue's
variants plug into, the probes, the concept checks, and the sizes its evidence sentences quote.

An assignment (``grader.registry``) names its task; a course's own assignment reuses a task as it
is. A new task is a new record here, plus the catalogue rows that apply to it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

import reference
from grader.core import concepts, probes, unit_probes
from grader.core.concepts import Concept
from grader.model import Array, CallOutcome, Probe
from reference import unit_variants, variants

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
    #: what the submission returned, read in the task's terms before anything compares it (a
    #: mask in any accepted form becomes 1.0 where a query may attend and 0.0 elsewhere)
    read_outputs: Callable[[Sequence[CallOutcome]], list[CallOutcome]] | None = None
    #: how the numbers an evidence sentence quotes were read (with ``read_outputs``)
    read_as: str = ""
    #: ``unknown_rows(recipe, probe)``: the output rows (queries) that are not compared for a
    #: recipe, or None (a query its broken mask left without any key computes whatever its
    #: fill value gives)
    unknown_rows: Callable[[Recipe, Probe], Array | None] | None = None


def _plain(function: Callable[..., Array]) -> Callable[..., Outputs]:
    """A task computed as one array (no attention weights to return beside it)."""
    def outputs(*args: Any) -> Outputs:
        return function(*args), None
    return outputs


def _plain_pipeline(function: Callable[..., Array]) -> Callable[..., Outputs]:
    def outputs(recipe: Recipe, *args: Any, record: variants.Stages | None = None) -> Outputs:
        return function(recipe, *args, record=record), None
    return outputs


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


def _projection_words(recipe: Recipe) -> str:
    """Which matrix projects Q, K and V under the recipe ("Q from W_q, K from W_q, ...")."""
    return ", ".join(f"{role} from {_MATRIX_NAMES[c]}"
                     for role, c in zip("QKV", recipe.get("proj_matrices", "qkv")))


def _multi_head_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    q, k = probe.args[0], probe.args[1]
    d_model, heads = q.shape[-1], probe.args[6]
    d_k = d_model // heads
    return {**_sizes(q, d_k, d_k, q.shape[-2], k.shape[-2], heads, d_model, recipe),
            "projection": _projection_words(recipe)}


#: an additive mask blocks with -inf or a number at least this far below 0
ADDITIVE_BLOCKED = -1e4


def _read_masks(outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
    """Masks in any accepted form as 1.0 (may attend) and 0.0 (blocked). One reading for the
    whole submission: additive (0 allowed, -inf or <= -1e4 blocked) when any of its masks holds
    such a value, else boolean or 0/1 (an all-zero additive 1 x 1 mask is then still read right)."""
    outputs = [o.output for o in outcomes if o.output is not None]
    additive = any(np.any(a.astype(np.float64) <= ADDITIVE_BLOCKED) for a in outputs
                   if a.dtype.kind == "f")

    def read(array: Array | None) -> Array | None:
        if array is None or not array.size:
            return array
        values = array.astype(np.float64)
        if additive and array.dtype.kind == "f":
            known = (values == 0) | (values <= ADDITIVE_BLOCKED)
            values = np.where(known, (values == 0).astype(np.float64), np.nan)
        return values

    return [dataclasses.replace(o, output=read(o.output), repeat_output=read(o.repeat_output))
            for o in outcomes]


def _mask_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    n = int(probe.args[0])
    m = int(probe.args[1]) if len(probe.args) > 1 and probe.args[1] is not None else n
    return {"n": n, "m": m}


def _encoding_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    n_positions, d_model = probe.args
    return {"n_positions": n_positions, "d_model": d_model, "half": d_model // 2}


def _rope_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    x = probe.args[0]
    positions = probe.args[1] if len(probe.args) > 1 else None
    n = x.shape[-2]
    shown = "0..n-1" if positions is None else str(np.asarray(positions).tolist())
    return {"n": n, "d": x.shape[-1], "positions": shown, "last": n - 1,
            "theta": probe.args[2] if len(probe.args) > 2 else 10000.0}


def _causal_self_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    x = probe.args[0]
    d_model, heads = x.shape[-1], probe.args[5]
    d_k = d_model // heads
    n = x.shape[-2]
    return {**_sizes(x, d_k, d_k, n, n, heads, d_model, recipe),
            "projection": _projection_words(recipe)}


TASKS: Mapping[str, Task] = {
    task.name: task for task in (
        Task("softmax", _plain(reference.softmax), _plain_pipeline(variants.softmax),
             probes.softmax_probes, concepts.SOFTMAX_CONCEPTS, _softmax_fields),
        Task("attention", reference.scaled_dot_product_attention, variants.attention,
             probes.attention_probes, concepts.ATTENTION_CONCEPTS, _attention_fields),
        Task("multi_head_attention", _plain(reference.multi_head_attention),
             variants.multi_head_attention, probes.multi_head_probes,
             concepts.MULTI_HEAD_CONCEPTS, _multi_head_fields),
        Task("causal_mask", _plain(lambda *a: reference.causal_mask(*a).astype(np.float64)),
             _plain_pipeline(unit_variants.causal_mask), unit_probes.causal_mask_probes,
             unit_probes.CAUSAL_MASK_CONCEPTS, _mask_fields, read_outputs=_read_masks,
             read_as="masks read as 1 where the query may attend, 0 where it is blocked"),
        Task("positional_encoding", _plain(reference.positional_encoding),
             _plain_pipeline(unit_variants.positional_encoding),
             unit_probes.positional_encoding_probes, unit_probes.POSITIONAL_ENCODING_CONCEPTS,
             _encoding_fields),
        Task("rope", _plain(reference.rope), _plain_pipeline(unit_variants.rope),
             unit_probes.rope_probes, unit_probes.ROPE_CONCEPTS, _rope_fields),
        Task("causal_self_attention", _plain(reference.causal_self_attention),
             _plain_pipeline(unit_variants.causal_self_attention),
             unit_probes.causal_self_attention_probes,
             unit_probes.CAUSAL_SELF_ATTENTION_CONCEPTS, _causal_self_fields,
             unknown_rows=lambda recipe, probe: unit_variants.rows_without_keys(
                 recipe, probe.args[0].shape[-2])),
    )
}


def build_probes(task: str, seed: int) -> list[Probe]:
    """The probes of ``task``; the same seed always gives the same probes (each knows it).

    Made once per task and seed in a process (a batch grades hundreds of submissions on the
    same probes); their arrays are read-only, so that nothing can change them between uses.
    """
    return list(_made_probes(task, seed))


#: values computed from a probe's inputs alone (the reference's outputs, a recipe's), kept
#: across submissions: a batch grades hundreds on the same probes, and ``build_probes`` hands
#: out the same input objects. Keyed by the inputs' identity, which each entry keeps alive, so
#: an identity is never reused while its entry lives.
_KEPT: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}
KEPT_ENTRIES = 20_000


def kept(key: tuple[Any, ...], args: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """``compute()``, a function of ``args`` (and of ``key``, which says what it computes),
    computed once while ``args`` stays the same object; its arrays are read-only."""
    full = (*key, id(args))
    entry = _KEPT.get(full)
    if entry is not None and entry[0] is args:
        return entry[1]
    value = compute()
    for part in value if isinstance(value, tuple) else (value,):
        if isinstance(part, np.ndarray):
            part.setflags(write=False)
    if len(_KEPT) >= KEPT_ENTRIES:
        _KEPT.clear()
    _KEPT[full] = (args, value)
    return value


@functools.lru_cache(maxsize=64)
def _made_probes(task: str, seed: int) -> tuple[Probe, ...]:
    made = TASKS[task].make_probes(probes.Maker(seed, task))
    for probe in made:
        for value in probe.args:
            if hasattr(value, "setflags"):
                value.setflags(write=False)
    return tuple(dataclasses.replace(p, meta=MappingProxyType({**p.meta, "seed": seed}))
                 for p in made)


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
