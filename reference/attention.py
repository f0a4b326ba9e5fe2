"""Reference scaled dot-product attention (SPEC section 1, assignment ``attention``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.softmax import softmax

Array = NDArray[np.float64]


def scaled_dot_product_attention(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, mask: ArrayLike | None = None
) -> tuple[Array, Array]:
    """Return ``(output, weights)`` for softmax(Q K^T / sqrt(d_k)) V.

    ``mask`` is boolean and broadcastable to (..., n, m); True means the query may attend to the key.
    """
    queries = np.asarray(Q, dtype=np.float64)
    keys = np.asarray(K, dtype=np.float64)
    values = np.asarray(V, dtype=np.float64)
    d_k = queries.shape[-1]
    scores = queries @ np.swapaxes(keys, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ values, weights
