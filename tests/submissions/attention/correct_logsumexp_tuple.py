# expect:
import numpy as np
from scipy.special import logsumexp


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.swapaxes(-1, -2) * (1.0 / np.sqrt(K.shape[-1]))
    if mask is not None:
        scores = scores + (1 - mask.astype(float)) * -1e9
    weights = np.exp(scores - logsumexp(scores, axis=-1, keepdims=True))
    output = weights @ V
    return output, weights
