"""Reference multi-head attention (SPEC section 1, assignment ``multi_head_attention``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.attention import scaled_dot_product_attention

Array = NDArray[np.float64]


def split_heads(x: Array, num_heads: int) -> Array:
    """(..., n, d_model) -> (..., num_heads, n, d_k); head h takes features [h*d_k, (h+1)*d_k)."""
    *batch, n, d_model = x.shape
    per_head = x.reshape(*batch, n, num_heads, d_model // num_heads)
    return np.swapaxes(per_head, -2, -3)


def merge_heads(x: Array) -> Array:
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
) -> Array:
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
