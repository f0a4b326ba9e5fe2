# expect: merge-without-transpose missing-output-projection split-without-transpose
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    *batch, n, d_model = X_q.shape
    m = X_kv.shape[-2]
    d_k = d_model // num_heads
    Q = (X_q @ W_q).reshape(*batch, num_heads, n, d_k)
    K = (X_kv @ W_k).reshape(*batch, num_heads, m, d_k)
    V = (X_kv @ W_v).reshape(*batch, num_heads, m, d_k)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask[..., None, :, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    heads = weights @ V
    return heads.reshape(*batch, n, d_model)  # TODO: output projection
# where: split-without-transpose=9 missing-output-projection=18 merge-without-transpose=18
