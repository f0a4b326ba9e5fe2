"""Reference causal mask and causal self-attention (SPEC section 1, "The rest of the attention
unit": assignments ``causal_mask`` and ``causal_self_attention``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.attention import scaled_dot_product_attention
from reference.multi_head import merge_heads, split_heads
from reference.positions import rope

Array = NDArray[np.float64]


def causal_mask(n: int, m: int | None = None) -> NDArray[np.bool_]:
    """(n, m) keep-mask: the n queries are the last n of m positions, so query i (at position
    m - n + i) may attend to every key j <= m - n + i."""
    m = n if m is None else m
    return np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)


def causal_self_attention(
    X: ArrayLike, W_q: ArrayLike, W_k: ArrayLike, W_v: ArrayLike, W_o: ArrayLike,
    num_heads: int, theta: float | None = None,
) -> Array:
    """Multi-head self-attention under the causal mask; with ``theta``, RoPE on each head's
    queries and keys (positions 0 .. n-1), never on the values."""
    x = np.asarray(X, dtype=np.float64)
    q, k, v = (split_heads(x @ np.asarray(w, dtype=np.float64), num_heads)
               for w in (W_q, W_k, W_v))
    if theta is not None:
        q, k = rope(q, None, theta), rope(k, None, theta)
    heads, _ = scaled_dot_product_attention(q, k, v, causal_mask(x.shape[-2]))
    return merge_heads(heads) @ np.asarray(W_o, dtype=np.float64)
