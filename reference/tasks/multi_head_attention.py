"""The ``multi_head_attention`` task (SPEC section 1), and its pipeline (the shared
multi-head pipeline of ``reference.stages``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import Array, Recipe, Stages, multi_head
from reference.tasks.attention import scaled_dot_product_attention


def split_heads(x: NDArray[np.float64], num_heads: int) -> NDArray[np.float64]:
    """(..., n, d_model) -> (..., num_heads, n, d_k); head h takes features [h*d_k, (h+1)*d_k)."""
    *batch, n, d_model = x.shape
    per_head = x.reshape(*batch, n, num_heads, d_model // num_heads)
    return np.swapaxes(per_head, -2, -3)


def merge_heads(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """(..., num_heads, n, d_k) -> (..., n, num_heads * d_k), heads concatenated in order."""
    *batch, num_heads, n, d_k = x.shape
    return np.swapaxes(x, -2, -3).reshape(*batch, n, num_heads * d_k)


def multi_head_attention(
    X_q: ArrayLike,
    X_kv: ArrayLike,
    W_q: ArrayLike,
    W_k: ArrayLike,
    W_v: ArrayLike,
    W_o: ArrayLike,
    num_heads: int,
    mask: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Project, split into heads, attend per head with its own 1/sqrt(d_k), merge, project out."""
    queries = np.asarray(X_q, dtype=np.float64) @ np.asarray(W_q, dtype=np.float64)
    keys = np.asarray(X_kv, dtype=np.float64) @ np.asarray(W_k, dtype=np.float64)
    values = np.asarray(X_kv, dtype=np.float64) @ np.asarray(W_v, dtype=np.float64)
    head_mask = None if mask is None else np.expand_dims(np.asarray(mask, dtype=bool), -3)
    heads, _ = scaled_dot_product_attention(
        split_heads(queries, num_heads),
        split_heads(keys, num_heads),
        split_heads(values, num_heads),
        head_mask,
    )
    return merge_heads(heads) @ np.asarray(W_o, dtype=np.float64)


def reference(
    X_q: ArrayLike, X_kv: ArrayLike, W_q: ArrayLike, W_k: ArrayLike, W_v: ArrayLike,
    W_o: ArrayLike, num_heads: int, mask: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], None]:
    """The task's outputs: (output, no weights: they are not compared for this task)."""
    return multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask), None


def pipeline(
    recipe: Recipe,
    X_q: Array,
    X_kv: Array,
    W_q: Array,
    W_k: Array,
    W_v: Array,
    W_o: Array,
    num_heads: int,
    mask: Array | None = None,
    record: Stages | None = None,
) -> tuple[Array, None]:
    """The ``multi_head_attention`` task under ``recipe``."""
    with np.errstate(all="ignore"):
        return multi_head(recipe, X_q, X_kv, (W_q, W_k, W_v, W_o), num_heads, mask,
                          {} if record is None else record), None
