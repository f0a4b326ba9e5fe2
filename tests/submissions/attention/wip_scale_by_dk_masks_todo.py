# expect: scale-by-dk
# Work in progress: masking is not written yet (it raises), and the scale is 1/d_k. The crash is
# its own error; the calls that ran still show the scaling mistake.
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    if mask is not None:
        raise NotImplementedError("TODO: masking")
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V, weights
# where: scale-by-dk=10
