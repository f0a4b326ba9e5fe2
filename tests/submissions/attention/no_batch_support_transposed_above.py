# expect: no-batch-support
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    K_t = K.T
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K_t) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V
# where: no-batch-support=6
