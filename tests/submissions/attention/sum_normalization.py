# expect: sum-normalization
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, 0.0)
    weights = scores / scores.sum(axis=-1, keepdims=True)
    return weights @ V, weights
# where: sum-normalization=10
