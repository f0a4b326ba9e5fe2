# expect: scale-after-softmax
import numpy as np


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = _softmax(scores) / np.sqrt(d_k)
    return weights @ V, weights
# where: scale-after-softmax=15
