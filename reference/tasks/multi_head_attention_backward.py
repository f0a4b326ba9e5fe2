"""The ``multi_head_attention_backward`` task (SPEC section 1, "The backward pass"): the reference
written from the contract, and the pipeline of (possibly wrong) choices.

The pipeline recomputes the multi-head forward with the forward's choices (the shared
``reference.stages`` multi-head stages: projections, split, the attention core per head, merge,
output projection), so a forward misconception is the exact gradient of the forward that carries
it, then runs the chain rule back through each of those stages. The per-head attention is
``reference.tasks.attention_backward.backward_core`` with all its backward knobs; the
multi-head backward adds its own:

- ``weight_grad``: a weight's gradient is X^T dY (``right``) or its transpose dY^T X, for every
  weight (``transposed``), the three input projections only (``transposed_qkv``) or ``W_o``
  only (``transposed_o``);
- ``dx_weight``: the gradient through a projection is dY W^T (``transposed``) or dY W, for
  every weight (``plain``), the input projections only (``plain_qkv``) or ``W_o`` only
  (``plain_o``);
- ``backward_heads``: the backward undoes the forward's merge and split exactly
  (``transpose``), or splits dC into heads (``reshape_split``), merges the heads' gradients
  (``reshape_merge``) or both (``reshape_both``) by a plain reshape;
- ``dxkv_path``: dX_kv takes both the K and the V path (``both``), or only one (``k_only``,
  ``v_only``);
- ``dx_paths``: each input gets its own gradient (``separate``), or both get the
  self-attention total (``merged``; it only runs when X_q and X_kv have one shape).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import (
    _PROJECTIONS,
    Array,
    Dims,
    Recipe,
    Stages,
    _merge,
    _split,
    choice,
    knobs,
    multi_head,
    swap,
)
from reference.tasks.attention_backward import OWN as ATTENTION_BACKWARD_KNOBS
from reference.tasks.attention_backward import TEXTBOOK_MASKS, backward_core
from reference.tasks.multi_head_attention import merge_heads, split_heads
from reference.tasks.softmax import softmax

OWN = knobs(
    weight_grad="right",
    dx_weight="transposed",
    backward_heads="transpose",
    dxkv_path="both",
    dx_paths="separate",
)

#: the knobs only a backward pass has (this task's and the per-head attention backward's)
BACKWARD_KNOBS = frozenset({*OWN, *ATTENTION_BACKWARD_KNOBS})

#: the gradients, in the order the task returns them
OUTPUTS = ("dX_q", "dX_kv", "dW_q", "dW_k", "dW_v", "dW_o")

Gradients = tuple[NDArray[np.float64], ...]


def _weight_grad(x: Array, d_y: Array) -> Array:
    """X^T dY summed over every leading index and position: (d_in, d_out)."""
    return x.reshape(-1, x.shape[-1]).T @ d_y.reshape(-1, d_y.shape[-1])


def multi_head_attention_backward(
    grad_output: ArrayLike, X_q: ArrayLike, X_kv: ArrayLike, W_q: ArrayLike, W_k: ArrayLike,
    W_v: ArrayLike, W_o: ArrayLike, num_heads: int, mask: ArrayLike | None = None,
) -> Gradients:
    """``(dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o)`` of L = sum(Y * grad_output), Y =
    ``multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask)`` (SPEC)."""
    d_y = np.asarray(grad_output, dtype=np.float64)
    x_q, x_kv = np.asarray(X_q, dtype=np.float64), np.asarray(X_kv, dtype=np.float64)
    w_q, w_k, w_v, w_o = (np.asarray(w, dtype=np.float64) for w in (W_q, W_k, W_v, W_o))
    q_heads, k_heads, v_heads = (split_heads(x @ w, num_heads)
                                 for x, w in ((x_q, w_q), (x_kv, w_k), (x_kv, w_v)))
    head_mask = None if mask is None else np.expand_dims(np.asarray(mask, dtype=bool), -3)
    scale = 1 / np.sqrt(x_q.shape[-1] // num_heads)
    scores = q_heads @ swap(k_heads) * scale
    if head_mask is not None:
        scores = np.where(head_mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    concatenated = merge_heads(weights @ v_heads)
    d_heads = split_heads(d_y @ w_o.T, num_heads)  # dC, split as Q was
    d_weights = d_heads @ swap(v_heads)
    d_scores = weights * (d_weights - np.sum(weights * d_weights, axis=-1, keepdims=True))
    if head_mask is not None:
        d_scores = np.where(head_mask, d_scores, 0.0)
    d_q = merge_heads(d_scores * scale @ k_heads)
    d_k = merge_heads(swap(d_scores * scale) @ q_heads)
    d_v = merge_heads(swap(weights) @ d_heads)
    return (d_q @ w_q.T, d_k @ w_k.T + d_v @ w_v.T, _weight_grad(x_q, d_q),
            _weight_grad(x_kv, d_k), _weight_grad(x_kv, d_v), _weight_grad(concatenated, d_y))


def reference(
    grad_output: ArrayLike, X_q: ArrayLike, X_kv: ArrayLike, W_q: ArrayLike, W_k: ArrayLike,
    W_v: ArrayLike, W_o: ArrayLike, num_heads: int, mask: ArrayLike | None = None,
) -> Gradients:
    """The task's outputs: the six gradients, in ``OUTPUTS`` order."""
    return multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
                                         mask)


#: the weights (0..3: W_q, W_k, W_v, W_o) each wrong choice of ``weight_grad`` /
#: ``dx_weight`` acts on
ACTS_ON: dict[str, tuple[int, ...]] = {
    "transposed": (0, 1, 2, 3), "transposed_qkv": (0, 1, 2), "transposed_o": (3,),
    "plain": (0, 1, 2, 3), "plain_qkv": (0, 1, 2), "plain_o": (3,),
}


def _wrong_for(recipe: Recipe, knob: str, index: int) -> bool:
    """Does the recipe's wrong choice of ``knob`` act on weight ``index``?"""
    setting = choice(recipe, knob)
    return setting != OWN[knob] and index in ACTS_ON[setting]


def _linear_backward(recipe: Recipe, x: Array, d_y: Array, w: Array, index: int
                     ) -> tuple[Array, Array]:
    """(dX, dW) of Y = X W under the recipe's choices, for weight ``index``."""
    d_x = d_y @ (w if _wrong_for(recipe, "dx_weight", index) else w.T)
    d_w = _weight_grad(x, d_y)
    if _wrong_for(recipe, "weight_grad", index):
        d_w = d_w.T
    return d_x, d_w


def _effective_weights(recipe: Recipe, weights: tuple[Array, ...]) -> tuple[Array, ...]:
    """The matrices the forward multiplies by (nn.Linear's W^T where the recipe says so)."""
    transposed = choice(recipe, "projection")
    if transposed == "right":
        return weights
    return tuple(w.T if (transposed == "transposed" or i < 3) else w
                 for i, w in enumerate(weights))


def _input_paths(recipe: Recipe, x_q: Array, x_kv: Array, grads: tuple[Array, Array, Array],
                 effective: tuple[Array, ...], weight_grads: list[Array]
                 ) -> tuple[Array, Array, Array]:
    """The gradients of the projections' inputs, one per path (Q, K, V); each projection's
    weight gradient added to ``weight_grads`` (in the forward's effective matrices)."""
    source = x_q if choice(recipe, "kv_source") == "x_q" else x_kv
    picks = _PROJECTIONS[choice(recipe, "proj_matrices")]
    paths = []
    for x, grad, pick in zip((x_q, source, source), grads, picks):
        if pick < 0:
            paths.append(grad)
            continue
        d_x, d_w = _linear_backward(recipe, x, grad, effective[pick], pick)
        weight_grads[pick] = weight_grads[pick] + d_w
        paths.append(d_x)
    return paths[0], paths[1], paths[2]


def _inputs_gradients(recipe: Recipe, x_q: Array, x_kv: Array,
                      paths: tuple[Array, Array, Array], stages: Stages) -> tuple[Array, Array]:
    """dX_q and dX_kv from the three paths, as the recipe adds them up."""
    q_path, k_path, v_path = paths
    kv_paths = {"both": (k_path, v_path), "k_only": (k_path,), "v_only": (v_path,)}[
        choice(recipe, "dxkv_path")]
    if choice(recipe, "dx_paths") == "merged":
        total = q_path + k_path + v_path
        return total, total
    kv_total = kv_paths[0] if len(kv_paths) == 1 else kv_paths[0] + kv_paths[1]
    if choice(recipe, "kv_source") == "x_q":  # K and V come from X_q: X_kv has no gradient
        return q_path + kv_total, np.zeros_like(x_kv)
    stages["dX_kv"] = kv_total
    return q_path, kv_total


def _heads_backward(recipe: Recipe, d_merged: Array, fwd: Stages, num_heads: int,
                    mask: Array | None, dims: Dims, stages: Stages
                    ) -> tuple[Array, Array, Array]:
    """dQ, dK, dV at full width (..., n or m, d_model) from dC, through the heads."""
    split = choice(recipe, "split")
    if split == "none":
        return backward_core(recipe, d_merged, fwd["q"], fwd["k"], fwd["v"], mask, dims, stages)
    how_back = choice(recipe, "backward_heads")
    unmerge = "reshape" if how_back in ("reshape_split", "reshape_both") else choice(recipe,
                                                                                     "merge")
    remerge = "reshape" if how_back in ("reshape_merge", "reshape_both") else split
    head_mask = mask
    if mask is not None and choice(recipe, "mask_heads") == "expand":
        head_mask = np.expand_dims(mask, -3)
    d_heads = stages["dC_heads"] = _split(d_merged, num_heads, unmerge)
    head_grads = backward_core(recipe, d_heads, fwd["q_heads"], fwd["k_heads"], fwd["v_heads"],
                               head_mask, dims, stages)
    d_q, d_k, d_v = (_merge(g, remerge) for g in head_grads)
    stages.update(dQ_merged=d_q, dK_merged=d_k, dV_merged=d_v)
    return d_q, d_k, d_v


#: forward results kept across recipes that differ only in backward knobs (a diagnosis tries
#: thousands of recipes on the same probe): key -> (the arguments, kept alive, and the result)
_FORWARDS: dict[tuple[object, ...], tuple[tuple[object, ...], tuple[Array, Stages]]] = {}
_FORWARDS_KEPT = 4096


def _forward(recipe: Recipe, x_q: Array, x_kv: Array,
             weights: tuple[Array, Array, Array, Array],
             num_heads: int, mask: Array | None) -> tuple[Array, Stages]:
    """The forward up to the merged heads (the output projection's input), and its stages,
    under the recipe's forward choices; the same for recipes with the same forward choices."""
    forward = {knob: c for knob, c in recipe.items() if knob not in BACKWARD_KNOBS}
    forward["output_projection"] = "none"
    if choice(recipe, "mask") in TEXTBOOK_MASKS:
        forward["mask"] = TEXTBOOK_MASKS[choice(recipe, "mask")]
    args = (x_q, x_kv, *weights, mask)
    key = (*sorted(forward.items()), num_heads, *(id(a) for a in args))
    kept = _FORWARDS.get(key)
    if kept is not None and all(a is b for a, b in zip(kept[0], args)):
        return kept[1]
    fwd: Stages = {}
    merged = multi_head(forward, x_q, x_kv, weights, num_heads, mask, fwd)
    if len(_FORWARDS) >= _FORWARDS_KEPT:
        _FORWARDS.clear()
    _FORWARDS[key] = (args, (merged, fwd))
    return merged, fwd


def backward(recipe: Recipe, d_y: Array, x_q: Array, x_kv: Array,
             weights: tuple[Array, Array, Array, Array], num_heads: int, mask: Array | None,
             stages: Stages) -> Gradients:
    """The forward of ``reference.stages.multi_head`` under the recipe, then the chain rule back
    through it with the recipe's backward choices: the six gradients."""
    merged, fwd = _forward(recipe, x_q, x_kv, weights, num_heads, mask)
    stages.update(fwd)
    effective = _effective_weights(recipe, weights)
    weight_grads = [np.zeros_like(w) for w in weights]
    if choice(recipe, "output_projection") != "none":
        d_merged, weight_grads[3] = _linear_backward(recipe, merged, d_y, effective[3], 3)
    else:
        d_merged = d_y
    stages["dC"] = d_merged
    d_model = x_q.shape[-1]
    dims = Dims(n=fwd["q"].shape[-2], m=fwd["k"].shape[-2], d_k=d_model // num_heads,
                d_v=d_model // num_heads, k_shape0=fwd["k"].shape[0],
                k_shape1=fwd["k"].shape[1], d_model=d_model, num_heads=num_heads)
    grads = _heads_backward(recipe, d_merged, fwd, num_heads, mask, dims, stages)
    paths = _input_paths(recipe, x_q, x_kv, grads, effective, weight_grads)
    d_x_q, d_x_kv = _inputs_gradients(recipe, x_q, x_kv, paths, stages)
    stages["dX_q"] = d_x_q
    transposed = choice(recipe, "projection")
    named = [w.T if transposed != "right" and (transposed == "transposed" or i < 3) else w
             for i, w in enumerate(weight_grads)]
    stages.update(dW_q=named[0], dW_k=named[1], dW_v=named[2], dW_o=named[3])
    return (d_x_q, d_x_kv, *named)


#: knobs that change nothing when no mask is given
MASK_KNOBS = frozenset({"mask", "mask_heads"})
#: outputs kept across recipes that compute the same thing on the same arguments (a recipe with
#: a mask choice, on a call without a mask): key -> (the arguments, kept alive, and the result)
_OUTPUTS: dict[tuple[object, ...], tuple[tuple[object, ...], Gradients]] = {}


def pipeline(
    recipe: Recipe, grad_output: Array, X_q: Array, X_kv: Array, W_q: Array, W_k: Array,
    W_v: Array, W_o: Array, num_heads: int, mask: Array | None = None,
    record: Stages | None = None,
) -> Gradients:
    """The ``multi_head_attention_backward`` task under ``recipe``: the six gradients."""
    args = (grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, mask)
    if mask is None:
        recipe = {knob: c for knob, c in recipe.items() if knob not in MASK_KNOBS}
    key = (*sorted(recipe.items()), num_heads, *(id(a) for a in args))
    kept = _OUTPUTS.get(key) if record is None else None
    if kept is not None and all(a is b for a, b in zip(kept[0], args)):
        return kept[1]
    with np.errstate(all="ignore"):
        grads = backward(recipe, grad_output, X_q, X_kv, (W_q, W_k, W_v, W_o), num_heads, mask,
                         {} if record is None else record)
    if record is None:
        if len(_OUTPUTS) >= _FORWARDS_KEPT:
            _OUTPUTS.clear()
        _OUTPUTS[key] = (args, grads)
    return grads
