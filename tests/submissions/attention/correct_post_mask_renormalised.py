# expect:
import numpy as np


def softmax(x):
    x = x - np.max(x, axis=-1, keepdims=True)
    return np.exp2(x * np.log2(np.e)) / np.sum(np.exp2(x * np.log2(np.e)), axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scale = d_k ** -0.25
    weights = softmax((Q * scale) @ np.swapaxes(K * scale, -1, -2))
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(axis=-1, keepdims=True)
    return (weights @ V, weights)
