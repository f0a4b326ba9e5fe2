# located: output
import numpy as np


def _split(x, num_heads):
    *batch, n, d_model = x.shape
    x = x.reshape(*batch, n, num_heads, d_model // num_heads)
    return np.swapaxes(x, -2, -3)


def _merge(x):
    x = np.swapaxes(x, -2, -3)
    *batch, n, h, d_k = x.shape
    return x.reshape(*batch, n, h * d_k)


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q = _split(X_q @ W_q, num_heads)
    K = _split(X_kv @ W_k, num_heads)
    V = _split(X_kv @ W_v, num_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask[..., None, :, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    heads = weights @ V
    merged = _merge(heads)
    return merged @ W_o.T
