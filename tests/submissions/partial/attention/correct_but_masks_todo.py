# expect:
# Right wherever it runs, but masking is not written yet: the crashes cost points, and no
# misconception is named (none is shown), not even no-batch-support.
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    if mask is not None:
        raise NotImplementedError("TODO: masking")
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ V
