# expect:
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    """einsum, Q pre-scaled, -1e9 fill, output only."""
    q = Q / np.sqrt(K.shape[-1])
    scores = np.einsum("...nd,...md->...nm", q, K)
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return np.einsum("...nm,...mv->...nv", e / e.sum(-1, keepdims=True), V)
