"""The ``flash_attention_backward`` task (SPEC section 1, "Tiled attention"): the gradients of
attention by recomputation from the logsumexp L, a plain reference (whole matrices), a tiled
one (FlashAttention-2's backward, key tiles outside) that agrees with it, and the pipeline of
its choices.

The pipeline recomputes P = exp(S - L) from the given (correct) L with the recipe's scores and
mask, then runs the chain rule with the recipe's backward choices:

- ``scale``: the factor of S, of P's recomputation and of dQ, dK (``sqrt_dk``, ``dk``,
  ``none``), as in the forward;
- ``flash_p_scale``: P recomputed from the scaled scores (``scaled``) or from Q K^T
  (``unscaled``, while dQ, dK keep the factor);
- ``flash_grad_scale``: dQ = dS K times the factor (``chain``) or without it (``none``);
- ``flash_d``: dS = P * (dP - D) with D = rowsum(dO * O) (``subtracted``) or P * dP
  (``missing``);
- ``flash_remainder``, ``flash_mask_tiles``, ``mask_align``, ``causal``: the tiles and the
  causal mask as the forward's pipeline models them. Tiles never visited leave their rows of
  the gradients at 0 (the arrays start as zeros).

A choice that changes P can be written with either form of D (SPEC): rowsum(dO * O) from the
given O, or rowsum(P * dP) from the submission's own P; they differ exactly when P is wrong.
Each such choice therefore has a twin named with the suffix ``WEIGHTS_D`` (``missing_dp``,
``dk_dp``, ...): the same mistake, with D = rowsum(P * dP). Both belong to the same ID.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import (
    SCALE,
    Array,
    Dims,
    Recipe,
    Stages,
    choice,
    knobs,
    swap,
    tile_states,
)
from reference.tasks import flash_attention_forward as forward
from reference.tasks.causal_mask import causal_mask

CORRECT = knobs(
    flash_p_scale="scaled",
    flash_grad_scale="chain",
    flash_d="subtracted",
)

Grads = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]

#: the suffix of a P-changing choice whose D is rowsum(P * dP) (see the module's docstring)
WEIGHTS_D = "_dp"
#: the knobs whose wrong choices change P, and those choices: each has its ``WEIGHTS_D`` twin
P_CHANGING = {"scale": ("dk", "none"), "flash_p_scale": ("unscaled",),
              "flash_mask_tiles": ("tile_local", "tile_local_skip"),
              "mask_align": ("top_left",), "causal": ("missing",),
              "flash_remainder": ("keys", "both")}


def weights_d(*choices: str) -> tuple[str, ...]:
    """The ``WEIGHTS_D`` twins of these choices."""
    return tuple(c + WEIGHTS_D for c in choices)


def read_d_form(recipe: Recipe) -> tuple[Recipe, bool]:
    """The recipe with its twins read as the choices they stand for, and whether D is
    rowsum(P * dP)."""
    twins = {k: v for k, v in recipe.items() if v.endswith(WEIGHTS_D)}
    if not twins:
        return recipe, False
    return {**recipe, **{k: v.removesuffix(WEIGHTS_D) for k, v in twins.items()}}, True


def _floats(*arrays: ArrayLike) -> list[NDArray[np.float64]]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def flash_attention_backward(
    grad_output: ArrayLike, Q: ArrayLike, K: ArrayLike, V: ArrayLike, output: ArrayLike,
    lse: ArrayLike, causal: bool = False, block_q: int = 16, block_k: int = 16,
) -> Grads:
    """(dQ, dK, dV) of sum(O * grad_output) by recomputation on whole matrices (the block sizes
    change nothing): P = exp(S - L), dV = P^T dO, dP = dO V^T, D = rowsum(dO * O),
    dS = P * (dP - D), dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d)."""
    d_o, q, k, v, o, lse = _floats(grad_output, Q, K, V, output, lse)
    n, m = q.shape[-2], k.shape[-2]
    scale = 1 / np.sqrt(q.shape[-1])
    scores = q @ swap(k) * scale
    if causal:
        scores = np.where(causal_mask(n, m), scores, -np.inf)
    p = np.exp(scores - lse[..., None])
    d_p = d_o @ swap(v)
    d_s = p * (d_p - np.sum(d_o * o, axis=-1, keepdims=True))
    return d_s @ k * scale, swap(d_s) @ q * scale, swap(p) @ d_o


def flash_attention_backward_tiled(
    grad_output: ArrayLike, Q: ArrayLike, K: ArrayLike, V: ArrayLike, output: ArrayLike,
    lse: ArrayLike, causal: bool = False, block_q: int = 16, block_k: int = 16,
) -> Grads:
    """(dQ, dK, dV) as FlashAttention-2's backward computes them: key tiles outside, query
    tiles inside, P of one (block_q, block_k) tile at a time recomputed from L."""
    d_o, q, k, v, o, lse = _floats(grad_output, Q, K, V, output, lse)
    n, m = q.shape[-2], k.shape[-2]
    scale = 1 / np.sqrt(q.shape[-1])
    d_rows = np.sum(d_o * o, axis=-1)
    d_q, d_k, d_v = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for j0 in range(0, m, block_k):
        j1 = min(j0 + block_k, m)
        for i0 in range(0, n, block_q):
            i1 = min(i0 + block_q, n)
            if causal and j0 > i1 - 1 + m - n:
                continue  # every key of this tile is in every row's future
            s = q[..., i0:i1, :] @ swap(k[..., j0:j1, :]) * scale
            if causal:
                s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None] + m - n,
                             s, -np.inf)
            p = np.exp(s - lse[..., i0:i1, None])
            d_v[..., j0:j1, :] += swap(p) @ d_o[..., i0:i1, :]
            d_s = p * (d_o[..., i0:i1, :] @ swap(v[..., j0:j1, :]) - d_rows[..., i0:i1, None])
            d_q[..., i0:i1, :] += d_s @ k[..., j0:j1, :] * scale
            d_k[..., j0:j1, :] += swap(d_s) @ q[..., i0:i1, :] * scale
    return d_q, d_k, d_v


def reference(
    grad_output: ArrayLike, Q: ArrayLike, K: ArrayLike, V: ArrayLike, output: ArrayLike,
    lse: ArrayLike, causal: bool = False, block_q: int = 16, block_k: int = 16,
) -> Grads:
    """The task's outputs: (dQ, dK, dV)."""
    return flash_attention_backward(grad_output, Q, K, V, output, lse, causal, block_q, block_k)


def pipeline(
    recipe: Recipe, grad_output: Array, Q: Array, K: Array, V: Array, output: Array, lse: Array,
    causal: bool = False, block_q: int = 16, block_k: int = 16, record: Stages | None = None,
) -> tuple[Array, Array, Array]:
    """The ``flash_attention_backward`` task under ``recipe``: (dQ, dK, dV)."""
    d_o, q, k, v, o, lse = _floats(grad_output, Q, K, V, output, lse)
    recipe, d_from_weights = read_d_form(recipe)
    n, m, d = q.shape[-2], k.shape[-2], q.shape[-1]
    dims = Dims(n=n, m=m, d_k=d, d_v=v.shape[-1], k_shape0=k.shape[0], k_shape1=k.shape[1])
    factor = SCALE[choice(recipe, "scale")](dims)
    p_factor = factor if choice(recipe, "flash_p_scale") == "scaled" else 1.0
    grad_factor = factor if choice(recipe, "flash_grad_scale") == "chain" else 1.0
    rows, keys = forward._limits(recipe, n, m, block_q, block_k)
    keep = forward.keep_mask(recipe, bool(causal), n, m, block_q, block_k)
    keep = keep & (np.arange(m) < keys)[None, :] & (np.arange(n) < rows)[:, None]
    with np.errstate(all="ignore"):
        p = np.where(keep, np.exp(q @ swap(k) * p_factor - lse[..., None]), 0.0)
        d_p = d_o @ swap(v)
        if choice(recipe, "flash_d") == "subtracted":
            weighted = p * d_p if d_from_weights else d_o * o
            d_p = d_p - np.sum(weighted, axis=-1, keepdims=True)
        d_s = p * d_p
        grads = (d_s @ k * grad_factor, swap(d_s) @ q * grad_factor, swap(p) @ d_o)
    if record is not None:
        # D = rowsum(dO * O), the code's own (whether or not it subtracts it): a per-row
        # value, held whole or a query tile's rows at a time
        record["D"] = tile_states([np.sum(d_o * o, axis=-1)], per_row=True)
        record["P"], record["dS"] = p, d_s
        record["dQ"], record["dK"], record["dV"] = grads
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], d_o.shape[:-2])
    d_q, d_k, d_v = (np.broadcast_to(g, (*lead, *g.shape[-2:])).copy() for g in grads)
    return d_q, d_k, d_v
