"""The ``attention`` task: scaled dot-product attention (SPEC section 1), and its pipeline
(the shared attention core of ``reference.stages``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import Array, Dims, Recipe, Stages, attention_core
from reference.tasks.softmax import softmax


def scaled_dot_product_attention(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, mask: ArrayLike | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
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


def reference(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, mask: ArrayLike | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The task's outputs: (output, weights)."""
    return scaled_dot_product_attention(Q, K, V, mask)


def pipeline(
    recipe: Recipe, Q: Array, K: Array, V: Array, mask: Array | None = None,
    record: Stages | None = None,
) -> tuple[Array, Array]:
    """The ``attention`` task under ``recipe``: (output, weights)."""
    dims = Dims(
        n=Q.shape[-2],
        m=K.shape[-2],
        d_k=Q.shape[-1],
        d_v=V.shape[-1],
        k_shape0=K.shape[0],
        k_shape1=K.shape[1],
    )
    with np.errstate(all="ignore"):
        return attention_core(recipe, Q, K, V, mask, dims, record)
