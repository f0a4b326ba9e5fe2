# expect:
import numpy as np
from scipy.special import logsumexp


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = np.einsum("...qd,...kd->...qk", Q, K) / d_k ** 0.5
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    log_weights = scores - logsumexp(scores, axis=-1, keepdims=True)
    return np.einsum("...qk,...kv->...qv", np.exp(log_weights), V)
