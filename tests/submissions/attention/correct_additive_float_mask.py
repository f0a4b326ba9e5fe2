# expect:
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Additive float mask built from the boolean one, scores scaled after masking."""
    scores = np.matmul(Q, np.swapaxes(K, -2, -1))
    if mask is not None:
        keep = np.asarray(mask, dtype=float)
        scores = scores * keep + (1.0 - keep) * -1e9
    scores = scores / np.sqrt(K.shape[-1])
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.matmul(weights, V), weights
