"""The ``attention_backward`` task: the gradients of scaled dot-product attention (SPEC section
1, "The backward pass"), and its pipeline.

The pipeline recomputes the forward with the forward's choices (``reference.stages.attention_core``,
so a forward misconception is the exact gradient of the forward that carries it), then runs the
chain rule back through each stage of that forward, with the backward's own wrong choices:

- ``dsoftmax``: how dS is built from P and dP: the Jacobian (``jacobian``), its diagonal only
  (``diagonal``: P * dP), or as if elementwise (``elementwise``: dP * P * (1 - P));
- ``rowsum_weight``: the row sum subtracted is of P * dP (``weighted``) or of dP (``plain``);
- ``rowsum_axis``: it runs over the softmax's axis (``softmax``), the other of the last two
  (``other``), or over the softmax's axis without ``keepdims`` (``no_keepdims``: NumPy then
  broadcasts the sums along the last axis);
- ``dv_product``: dV = P^T dO (``transposed``) or P dO (``plain``);
- ``dk_product``: dK = dS^T Q (``transposed``) or dS Q (``plain``);
- ``backward_scale``: dQ and dK carry the forward's factor (``chain``), none (``none``) or
  1/d_k (``dk``).

Two mask choices exist only here (``mask``: ``zero_fill_textbook``, ``after_softmax_textbook``):
the forward of ``zero_fill`` / ``after_softmax`` with the mask left out of the backward (the
weights pushed through the textbook formulas as they are), the second member of those families.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import (
    SCALE,
    Array,
    Dims,
    Recipe,
    Stages,
    attention_core,
    choice,
    knobs,
    swap,
)
from reference.tasks.attention import scaled_dot_product_attention

OWN = knobs(
    dsoftmax="jacobian",
    rowsum_weight="weighted",
    rowsum_axis="softmax",
    dv_product="transposed",
    dk_product="transposed",
    backward_scale="chain",
)

#: the backward-only mask choices: the forward they compute, and the backward leaves the mask out
TEXTBOOK_MASKS = {"zero_fill_textbook": "zero_fill", "after_softmax_textbook": "after_softmax"}

#: normalize choice -> the axis (axes; None: all) its softmax normalises over; absent: no
#: softmax (``sum``, ``exp_only``, ``exp_shifted_only`` have their own derivatives)
SOFTMAX_AXES: dict[str, int | tuple[int, ...] | None] = {
    "softmax": -1, "unstable": -1, "global_max": -1,
    "over_queries": -2, "over_queries_unstable": -2,
    "global": (-2, -1), "global_all": None,
    "axis0": 0, "axis1": 1,
}


def attention_backward(
    grad_output: ArrayLike, Q: ArrayLike, K: ArrayLike, V: ArrayLike,
    mask: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(dQ, dK, dV)`` of L = sum(O * grad_output), O = softmax(Q K^T / sqrt(d_k)) V (SPEC)."""
    d_o = np.asarray(grad_output, dtype=np.float64)
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    _, p = scaled_dot_product_attention(q, k, v, mask)
    scale = 1 / np.sqrt(q.shape[-1])
    d_v = swap(p) @ d_o
    d_p = d_o @ swap(v)
    d_s = p * (d_p - np.sum(p * d_p, axis=-1, keepdims=True))
    if mask is not None:
        d_s = np.where(np.asarray(mask, dtype=bool), d_s, 0.0)
    d_q = d_s @ k * scale
    d_k = swap(d_s) @ q * scale
    return (_unbroadcast(d_q, q.shape), _unbroadcast(d_k, k.shape),
            _unbroadcast(d_v, v.shape))


def reference(
    grad_output: ArrayLike, Q: ArrayLike, K: ArrayLike, V: ArrayLike,
    mask: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The task's outputs: (dQ, dK, dV)."""
    return attention_backward(grad_output, Q, K, V, mask)


def _unbroadcast(grad: Array, shape: tuple[int, ...]) -> Array:
    """A gradient summed back to the shape of the argument it belongs to (an argument that
    broadcast over leading axes gets the sum over them)."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def softmax_grad(recipe: Recipe, p: Array, d_p: Array, axis: int | tuple[int, ...] | None,
                 record: Stages | None = None) -> Array:
    """dS from the softmax's output P (over ``axis``) and dP, with the recipe's choices (the
    row sum it subtracts put in ``record`` as "rowsum", when given)."""
    stages: Stages = {} if record is None else record
    form = choice(recipe, "dsoftmax")
    if form == "diagonal":
        return p * d_p
    if form == "elementwise":
        return d_p * p * (1 - p)
    weighted = p * d_p if choice(recipe, "rowsum_weight") == "weighted" else d_p
    where = choice(recipe, "rowsum_axis")
    if where == "no_keepdims":
        total = stages["rowsum"] = np.sum(weighted, axis=axis)
        return p * (d_p - total)
    if where == "no_keepdims_per_slice":  # the same, written per (n, m) slice (a head loop)
        total = stages["rowsum"] = np.sum(weighted, axis=axis)
        return p * (d_p - np.expand_dims(total, -2))
    if where == "other" and isinstance(axis, int):
        axis = OTHER_AXIS.get(axis, -2)
    total = stages["rowsum"] = np.sum(weighted, axis=axis, keepdims=True)
    return p * (d_p - total)


#: the axis a row sum over the wrong one of the last two uses instead
OTHER_AXIS: dict[int, int] = {-1: -2, -2: -1}


def _normalize_grad(recipe: Recipe, how: str, scores: Array, p: Array, d_p: Array,
                    record: Stages) -> Array:
    """dS of the normalisation ``how`` (P = normalize(S)), the softmax's with the recipe's
    backward choices."""
    if how in SOFTMAX_AXES:
        return softmax_grad(recipe, p, d_p, SOFTMAX_AXES[how], record)
    if how == "sum":  # P = s / sum(s), blocked scores (-inf) counted as constant 0
        unblocked = np.where(scores == -np.inf, 0.0, scores)
        total = np.sum(unblocked, axis=-1, keepdims=True)
        d_s = (d_p - np.sum(d_p * p, axis=-1, keepdims=True)) / total
        return np.where(scores == -np.inf, 0.0, d_s)
    # exp (shifted or not): the shift is a constant, as the code that writes it treats it
    return d_p * p


_MASK_GRAD: dict[str, Callable[[Array, Array], Array]] = {
    "where": lambda d, mask: np.where(mask, d, 0.0),
    "zero_fill": lambda d, mask: np.where(mask, d, 0.0),
    "inverted": lambda d, mask: np.where(mask, 0.0, d),
    "transposed": lambda d, mask: np.where(swap(mask), d, 0.0),
}


def backward_core(
    recipe: Recipe, d_o: Array, q: Array, k: Array, v: Array, mask: Array | None, dims: Dims,
    record: Stages | None = None,
) -> tuple[Array, Array, Array]:
    """The forward of ``attention_core`` under the recipe, then the chain rule back through it
    with the recipe's backward choices: (dQ, dK, dV), each of the shape of the forward's
    product it comes from (before any summing over broadcast axes)."""
    stages: Stages = {} if record is None else record
    mask_choice = choice(recipe, "mask")
    forward = dict(recipe)
    if mask_choice in TEXTBOOK_MASKS:
        forward["mask"] = TEXTBOOK_MASKS[mask_choice]
    fwd: Stages = {}
    attention_core(forward, q, k, v, mask, dims, fwd)
    stages.update(fwd)
    weights, p = fwd["weights"], fwd["softmax"]
    blend_keys = choice(recipe, "values") != "v"
    blended = k if blend_keys else v
    d_w = stages["dP"] = d_o @ swap(blended)
    d_blended = stages["dV"] = (swap(weights) if choice(recipe, "dv_product") == "transposed"
                                else weights) @ d_o
    factor = SCALE[choice(recipe, "scale")](dims)
    after_softmax = choice(recipe, "scale_at") == "weights"
    if after_softmax:
        d_w = d_w * factor
    if mask is not None and mask_choice == "after_softmax":
        d_w = np.where(mask, d_w, 0.0)
    normalised = fwd.get("masked", fwd["scaled"])
    d_s = stages["dS"] = _normalize_grad(recipe, choice(forward, "normalize"), normalised, p, d_w,
                                          stages)
    if mask is not None and mask_choice in _MASK_GRAD:
        d_s = stages["dS"] = _MASK_GRAD[mask_choice](d_s, mask)
    grad_scale = {"chain": 1.0 if after_softmax else factor, "none": 1.0,
                  "dk": 1.0 / dims.d_k}[choice(recipe, "backward_scale")]
    d_s = stages["dS_scaled"] = d_s * grad_scale
    scores = choice(recipe, "scores")
    plain_dk = choice(recipe, "dk_product") != "transposed"
    if scores == "qkt":
        d_q = d_s @ k
        d_k = (d_s if plain_dk else swap(d_s)) @ q
    elif scores == "kqt":
        d_k = d_s @ q
        d_q = swap(d_s) @ k
    else:  # "qk": S = Q K
        d_q = d_s @ swap(k)
        d_k = swap(q) @ d_s
    stages["dQ"], stages["dK"] = d_q, d_k
    if blend_keys:
        d_k = d_k + d_blended
        d_v = np.zeros(np.broadcast_shapes(v.shape, d_blended.shape[:-2] + v.shape[-2:]))
    else:
        d_v = d_blended
    return d_q, d_k, d_v


def pipeline(
    recipe: Recipe, grad_output: Array, Q: Array, K: Array, V: Array, mask: Array | None = None,
    record: Stages | None = None,
) -> tuple[Array, Array, Array]:
    """The ``attention_backward`` task under ``recipe``: (dQ, dK, dV)."""
    dims = Dims(n=Q.shape[-2], m=K.shape[-2], d_k=Q.shape[-1], d_v=V.shape[-1],
                k_shape0=K.shape[0], k_shape1=K.shape[1])
    with np.errstate(all="ignore"):
        d_q, d_k, d_v = backward_core(recipe, grad_output, Q, K, V, mask, dims, record)
        return (_unbroadcast(d_q, Q.shape), _unbroadcast(d_k, K.shape),
                _unbroadcast(d_v, V.shape))
