"""The ``causal_self_attention`` task (SPEC section 1, "The rest of the attention unit"):
multi-head self-attention under its own causal mask, with RoPE when given theta; and its
pipeline (the shared multi-head pipeline, the causal mask's and RoPE's knobs, and its own)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import Array, Recipe, Stages, choice, knobs, multi_head
from reference.tasks.attention import scaled_dot_product_attention
from reference.tasks.causal_mask import causal_keep, causal_mask
from reference.tasks.multi_head_attention import merge_heads, split_heads
from reference.tasks.rope import rope, rotated

CORRECT = knobs(causal="applied", rope_at="heads_qk")


def causal_self_attention(
    X: ArrayLike, W_q: ArrayLike, W_k: ArrayLike, W_v: ArrayLike, W_o: ArrayLike,
    num_heads: int, theta: float | None = None,
) -> NDArray[np.float64]:
    """Multi-head self-attention under the causal mask; with ``theta``, RoPE on each head's
    queries and keys (positions 0 .. n-1), never on the values."""
    x = np.asarray(X, dtype=np.float64)
    q, k, v = (split_heads(x @ np.asarray(w, dtype=np.float64), num_heads)
               for w in (W_q, W_k, W_v))
    if theta is not None:
        q, k = rope(q, None, theta), rope(k, None, theta)
    heads, _ = scaled_dot_product_attention(q, k, v, causal_mask(x.shape[-2]))
    return merge_heads(heads) @ np.asarray(W_o, dtype=np.float64)


def reference(
    X: ArrayLike, W_q: ArrayLike, W_k: ArrayLike, W_v: ArrayLike, W_o: ArrayLike,
    num_heads: int, theta: float | None = None,
) -> tuple[NDArray[np.float64], None]:
    """The task's outputs: (output, no weights: they are not compared for this task)."""
    return causal_self_attention(X, W_q, W_k, W_v, W_o, num_heads, theta), None


def pipeline(
    recipe: Recipe, X: Array, W_q: Array, W_k: Array, W_v: Array, W_o: Array,
    num_heads: int, theta: float | None = None, record: Stages | None = None,
) -> tuple[Array, None]:
    """The ``causal_self_attention`` task under ``recipe``: multi-head self-attention with the
    recipe's causal mask (or none) and, with ``theta``, its RoPE."""
    n = X.shape[-2]
    # no causal mask is a mask that keeps everything: the scores it "masks" are still a stage
    # of their own, the line after which the mask belongs
    mask = causal_keep(recipe, n, n) if choice(recipe, "causal") == "applied" else \
        np.ones((n, n), dtype=bool)
    if record is not None:
        record["causal_mask"] = mask.astype(np.float64)
    rotate = None
    if theta is not None:
        where = choice(recipe, "rope_at")

        before_split = where in ("before_split", "before_split_qkv")
        values_too = where in ("heads_qkv", "before_split_qkv")

        def rotate(q: Array, k: Array, v: Array, stage: str) -> tuple[Array, Array, Array]:
            if stage not in ("projected" if before_split else "split", "unsplit"):
                return q, k, v
            turned = (q, k, v) if values_too else (q, k)
            spun = [rotated(recipe, a, None, float(theta)) for a in turned]
            return spun[0], spun[1], spun[2] if values_too else v

    with np.errstate(all="ignore"):
        return multi_head(recipe, X, X, (W_q, W_k, W_v, W_o), num_heads, mask,
                          {} if record is None else record, rotate), None


def rows_without_keys(recipe: Recipe, n: int) -> Array | None:
    """The queries the recipe's own causal mask leaves without any key (the first with the
    diagonal blocked, the last with the mask inverted), or None: such a row computes whatever
    the code's fill value gives (NaN with -inf, a plain mean with -1e9), so it is judged from
    the other rows."""
    if choice(recipe, "causal") != "applied":
        return None
    empty = np.logical_not(np.any(causal_keep(recipe, n, n), axis=-1))
    return np.asarray(empty) if empty.any() else None
