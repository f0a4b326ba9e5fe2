"""The stages several tasks share, each with its buggy alternatives: the attention core
(scores, scale, mask, normalisation, the blend with the values) and the multi-head pipeline
around it. Each task's own pipeline, and its own knobs, are in ``reference.tasks.<task>``.

A *recipe* maps a stage (a "knob") to one of its choices; a knob left out takes its correct choice,
so the empty recipe is the reference. Buggy variants compose: a recipe with two wrong choices is a
submission with two misconceptions. ``reference.catalogue`` says which misconception each wrong
choice is; this module only computes.

Every stage function is plain NumPy on float64, and never warns: overflow and 0/0 are part of what
some variants (unstable softmax, global max) must reproduce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[Any]
Recipe = Mapping[str, str]

#: every knob's correct choice: the shared stages' here, each task's added by its module
#: (``knobs``) when ``reference.tasks`` loads
CORRECT: dict[str, str] = {
    # attention core (also inside every head of multi-head attention)
    "scores": "qkt",
    "scale": "sqrt_dk",
    "scale_at": "scores",
    "mask": "where",
    # how a (..., n, m) mask meets the (..., h, n, m) scores of multi-head attention
    "mask_heads": "expand",
    "normalize": "softmax",
    "values": "v",
    # multi-head attention (also inside causal self-attention)
    "projection": "right",
    "proj_matrices": "qkv",
    "kv_source": "x_kv",
    "split": "transpose",
    "merge": "transpose",
    "output_projection": "w_o",
}


def knobs(**correct: str) -> dict[str, str]:
    """A task's own knobs with their correct choices, added to ``CORRECT`` (a knob is one
    task's, or shared here: never declared twice with two correct choices)."""
    for knob, right in correct.items():
        if CORRECT.setdefault(knob, right) != right:
            raise ValueError(f"knob {knob!r} is declared twice, correct as "
                             f"{CORRECT[knob]!r} and {right!r}")
    return correct


@dataclass(frozen=True)
class Dims:
    """The sizes a scale choice may (wrongly or rightly) divide by."""

    n: int
    m: int
    d_k: int
    d_v: int
    k_shape0: int
    k_shape1: int
    d_model: int = 0
    num_heads: int = 1


def swap(x: Array) -> Array:
    return np.swapaxes(x, -1, -2)


def _stable_softmax(s: Array, axis: int | tuple[int, ...] | None) -> Array:
    e = np.exp(s - np.max(s, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _unblocked(s: Array) -> Array:
    return np.where(s == -np.inf, 0.0, s)


def _unshifted(s: Array, axis: int) -> Array:
    e = np.exp(s)
    return e / np.sum(e, axis=axis, keepdims=True)


def _global_max(s: Array, axis: int) -> Array:
    e = np.exp(s - np.max(s))
    return e / np.sum(e, axis=axis, keepdims=True)


# normalize(scores, axis) -> weights; `axis` is the axis the submission is asked to normalise.
NORMALIZE: dict[str, Callable[[Array, int], Array]] = {
    "softmax": lambda s, a: _stable_softmax(s, a),
    "over_queries": lambda s, a: _stable_softmax(s, -2),
    "global": lambda s, a: _stable_softmax(s, (-2, -1)),
    "global_all": lambda s, a: _stable_softmax(s, None),
    # blocked keys (-inf) count as 0 in the sum, as code that divides by a sum must fill them
    "sum": lambda s, a: _unblocked(s) / np.sum(_unblocked(s), axis=a, keepdims=True),
    "exp_only": lambda s, a: np.exp(s),
    "exp_shifted_only": lambda s, a: np.exp(s - np.max(s, axis=a, keepdims=True)),
    "unstable": _unshifted,
    # both at once (one line each way: no max subtracted, and the sum down the columns)
    "over_queries_unstable": lambda s, a: _unshifted(s, -2),
    "global_max": _global_max,
    "axis0": lambda s, a: _stable_softmax(s, 0),
    "axis1": lambda s, a: _stable_softmax(s, 1),
}

#: normalize choice -> what it subtracts from the scores before exponentiating (None: no exp);
#: only the stage recording (``Stages``) needs it, to tell the exponentials apart
EXP_SHIFT: dict[str, Callable[[Array, int], Array | float] | None] = {
    "softmax": lambda s, a: np.max(s, axis=a, keepdims=True),
    "over_queries": lambda s, a: np.max(s, axis=-2, keepdims=True),
    "global": lambda s, a: np.max(s, axis=(-2, -1), keepdims=True),
    "global_all": lambda s, a: np.max(s),
    "sum": None,
    "exp_only": lambda s, a: 0.0,
    "exp_shifted_only": lambda s, a: np.max(s, axis=a, keepdims=True),
    "unstable": lambda s, a: 0.0,
    "over_queries_unstable": lambda s, a: 0.0,
    "global_max": lambda s, a: np.max(s),
    "axis0": lambda s, a: np.max(s, axis=0, keepdims=True),
    "axis1": lambda s, a: np.max(s, axis=1, keepdims=True),
}

#: the intermediate values a recipe computes, in the order it computes them (stage -> array);
#: ``grader.core.locate`` finds the line of a submission that computes one of them
Stages = dict[str, Array]


class TileStates(np.ndarray):
    """A stage a loop over key tiles holds as running state: its value after each key tile,
    stacked on a first axis, ``(tiles, ..., n, f)`` (a per-row quantity with ``f = 1``). Code
    holds one tile's value at a time, for every query row (key tiles outside) or for one query
    tile's rows (query tiles outside); ``grader.core.locate`` matches it so."""


class TileBlocks(np.ndarray):
    """A stage of the whole ``(..., n, m)`` score matrix that tiled code computes one (query
    tile, key tile) block at a time: ``grader.core.locate`` matches a block of it."""


def tile_states(states: list[Array], per_row: bool = False) -> TileStates:
    """Values after each key tile, ``(..., n, f)`` (``per_row``: ``(..., n)``, given a last
    axis of one), as one stage."""
    stacked = np.stack([s[..., None] if per_row else s for s in states])
    return stacked.view(TileStates)


SCORES: dict[str, Callable[[Array, Array], Array]] = {
    "qkt": lambda q, k: q @ swap(k),
    "kqt": lambda q, k: k @ swap(q),
    "qk": lambda q, k: q @ k,
}

# scale choice -> the factor applied: to the scores before the softmax, or with the "scale_at"
# choice "weights", to the weights after it (amount and place compose)
SCALE: dict[str, Callable[[Dims], float]] = {
    "sqrt_dk": lambda d: 1 / np.sqrt(d.d_k),
    "dk": lambda d: 1 / d.d_k,
    "none": lambda d: 1.0,
    "times_sqrt_dk": lambda d: float(np.sqrt(d.d_k)),
    "sqrt_dv": lambda d: 1 / np.sqrt(d.d_v),
    "sqrt_m": lambda d: 1 / np.sqrt(d.m),
    "sqrt_n": lambda d: 1 / np.sqrt(d.n),
    "sqrt_k_shape0": lambda d: 1 / np.sqrt(d.k_shape0),
    "sqrt_k_shape1": lambda d: 1 / np.sqrt(d.k_shape1),
    "sqrt_dmodel": lambda d: 1 / np.sqrt(d.d_model),
    "sqrt_heads": lambda d: 1 / np.sqrt(d.num_heads),
}

_BLOCKED = -np.inf

# mask choice applied to the scaled scores (post-softmax and additive choices handled in the pipeline)
MASK_SCORES: dict[str, Callable[[Array, Array], Array]] = {
    "where": lambda s, mask: np.where(mask, s, _BLOCKED),
    "zero_fill": lambda s, mask: np.where(mask, s, 0.0),
    "inverted": lambda s, mask: np.where(mask, _BLOCKED, s),
    "ignored": lambda s, mask: s,
    "transposed": lambda s, mask: np.where(swap(mask), s, _BLOCKED),
    "additive": lambda s, mask: s + mask,
    "additive_before_scale": lambda s, mask: s,
    "after_softmax": lambda s, mask: s,
}


def choice(recipe: Recipe, knob: str) -> str:
    return recipe.get(knob, CORRECT[knob])


def normalize(how: str, s: Array, axis: int, record: Stages | None) -> Array:
    """The scores normalised as ``how`` says (each stage put in ``record`` when given)."""
    shift = EXP_SHIFT[how]
    if record is not None and shift is not None:
        shifted = record["shifted"] = s - shift(s, axis)
        record["exponentials"] = np.exp(shifted)
    return NORMALIZE[how](s, axis)


def attention_core(
    recipe: Recipe, q: Array, k: Array, v: Array, mask: Array | None, dims: Dims,
    record: Stages | None = None,
) -> tuple[Array, Array]:
    """Scores, scale, mask, normalise, blend: the attention computation with the recipe's choices
    (each intermediate value put in ``record`` when given)."""
    stages: Stages = {} if record is None else record
    mask_choice = choice(recipe, "mask")
    scale_choice = choice(recipe, "scale")
    scores = stages["scores"] = SCORES[choice(recipe, "scores")](q, k)
    if mask is not None and mask_choice == "additive_before_scale":
        scores = scores + mask
    factor = SCALE[scale_choice](dims)
    after_softmax = choice(recipe, "scale_at") == "weights"
    scores = stages["scaled"] = scores if after_softmax else scores * factor
    if mask is not None:
        scores = stages["masked"] = MASK_SCORES[mask_choice](scores, mask)
    weights = stages["softmax"] = normalize(choice(recipe, "normalize"), scores, -1, record)
    if after_softmax:
        weights = weights * factor
    if mask is not None and mask_choice == "after_softmax":
        weights = np.where(mask, weights, 0.0)
    stages["weights"] = weights
    blended = v if choice(recipe, "values") == "v" else k
    output = stages["output"] = weights @ blended
    return output, weights


_PROJECTIONS: dict[str, tuple[int, int, int]] = {
    # which of (W_q, W_k, W_v) projects Q, K and V; -1 means no projection at all
    "qkv": (0, 1, 2),
    "kqv": (1, 0, 2),
    "qqv": (0, 0, 2),
    "kkv": (1, 1, 2),
    "qkk": (0, 1, 1),
    "qkq": (0, 1, 0),
    "qvk": (0, 2, 1),
    "qqq": (0, 0, 0),
    "qk-": (0, 1, -1),
    "---": (-1, -1, -1),
}


def _split(x: Array, num_heads: int, how: str) -> Array:
    *batch, n, d_model = x.shape
    d_k = d_model // num_heads
    if how == "transpose":
        return np.swapaxes(x.reshape(*batch, n, num_heads, d_k), -2, -3)
    if how == "reshape":
        return x.reshape(*batch, num_heads, n, d_k)
    raise ValueError(how)


def _merge(x: Array, how: str) -> Array:
    *batch, num_heads, n, d_k = x.shape
    if how == "transpose":
        x = np.swapaxes(x, -2, -3)
    return x.reshape(*batch, n, num_heads * d_k)


#: rotate(q, k, v, stage) -> (q, k, v): position information applied to the projections
#: (stage "projected", full width, before the split), to the heads ("split"), or to the
#: full width when heads are never split ("unsplit"), as the recipe places it
Rotate = Callable[[Array, Array, Array, str], tuple[Array, Array, Array]]


def _rotated(rotate: Rotate, q: Array, k: Array, v: Array, stage: str, stages: Stages
             ) -> tuple[Array, Array, Array]:
    """``rotate`` applied at ``stage``; what it gives is recorded as stages of their own (the
    rotated queries and keys, and the values as they go on: turned only by a mistake), so that
    a line of the rotation is never told as the split or the projection before it."""
    turned = rotate(q, k, v, stage)
    if any(after is not before for before, after in zip((q, k, v), turned)):
        stages.update(zip(("q_rotated", "k_rotated", "v_rotated"), turned))
    return turned


def multi_head(
    recipe: Recipe,
    x_q: Array,
    x_kv: Array,
    weights: tuple[Array, Array, Array, Array],
    num_heads: int,
    mask: Array | None,
    stages: Stages,
    rotate: Rotate | None = None,
) -> Array:
    transposed = choice(recipe, "projection")
    if transposed != "right":
        weights = tuple(
            w.T if (transposed == "transposed" or i < 3) else w for i, w in enumerate(weights)
        )  # type: ignore[assignment]
    source = x_q if choice(recipe, "kv_source") == "x_q" else x_kv
    picks = _PROJECTIONS[choice(recipe, "proj_matrices")]
    inputs = (x_q, source, source)
    q, k, v = (x if pick < 0 else x @ weights[pick] for x, pick in zip(inputs, picks))
    stages.update(q=q, k=k, v=v)
    split = choice(recipe, "split")
    if rotate is not None:
        q, k, v = _rotated(rotate, q, k, v, "projected" if split != "none" else "unsplit",
                           stages)
    d_model = x_q.shape[-1]
    dims = Dims(
        n=q.shape[-2],
        m=k.shape[-2],
        d_k=d_model // num_heads,
        d_v=d_model // num_heads,
        k_shape0=k.shape[0],
        k_shape1=k.shape[1],
        d_model=d_model,
        num_heads=num_heads,
    )
    core: Stages = {}
    if split == "none":
        merged, _ = attention_core(recipe, q, k, v, mask, dims, core)
        stages.update(core)
    else:
        head_mask = mask
        if mask is not None and choice(recipe, "mask_heads") == "expand":
            head_mask = np.expand_dims(mask, -3)
        q_heads, k_heads, v_heads = (_split(x, num_heads, split) for x in (q, k, v))
        stages.update(q_heads=q_heads, k_heads=k_heads, v_heads=v_heads)
        if rotate is not None:
            q_heads, k_heads, v_heads = _rotated(rotate, q_heads, k_heads, v_heads, "split",
                                                 stages)
        heads, _ = attention_core(recipe, q_heads, k_heads, v_heads, head_mask, dims, core)
        stages.update({name: value for name, value in core.items() if name != "output"},
                      heads=heads)
        merged = stages["merged"] = _merge(heads, choice(recipe, "merge"))
    if choice(recipe, "output_projection") != "none":
        merged = merged @ weights[3]
    stages["output"] = merged
    return merged
