# expect: mask-ignored merge-without-transpose missing-output-projection
# A real work in progress: the mask is accepted but never used, heads are merged by a plain
# reshape, W_o is never applied, and it only handles self-attention (cross-attention crashes).
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    if X_kv.shape != X_q.shape:
        raise ValueError("only self-attention for now")
    *batch, n, d_model = X_q.shape
    d_k = d_model // num_heads

    def split(x):
        return np.swapaxes(x.reshape(*batch, n, num_heads, d_k), -2, -3)

    Q, K, V = split(X_q @ W_q), split(X_kv @ W_k), split(X_kv @ W_v)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    heads = (weights / weights.sum(axis=-1, keepdims=True)) @ V
    return heads.reshape(*batch, n, d_model)
