# expect: heads-not-split
import numpy as np


def attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


def _split(x, num_heads):
    *batch, n, d_model = x.shape
    return np.swapaxes(x.reshape(*batch, n, num_heads, d_model // num_heads), -2, -3)


def _merge(x):
    *batch, h, n, d_k = x.shape
    return np.swapaxes(x, -2, -3).reshape(*batch, n, h * d_k)


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    Qh, Kh, Vh = _split(Q, num_heads), _split(K, num_heads), _split(V, num_heads)
    heads = attention(Q, K, V, mask)
    return heads @ W_o
# where: heads-not-split=25
