# expect: softmax-over-queries unstable-softmax
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores)
    weights = e / e.sum(axis=-2, keepdims=True)
    return weights @ V, weights
