# expect: merge-without-transpose
import numpy as np


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _split(x, num_heads):
    *batch, n, d_model = x.shape
    return np.swapaxes(x.reshape(*batch, n, num_heads, d_model // num_heads), -2, -3)


def _merge(x):
    *batch, h, n, d_k = x.shape
    np.swapaxes(x, -2, -3)
    return x.reshape(*batch, n, h * d_k)


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    d_model = X_q.shape[-1]
    d_k = d_model // num_heads
    Q = _split(X_q @ W_q, num_heads)
    K = _split(X_kv @ W_k, num_heads)
    V = _split(X_kv @ W_v, num_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask[..., None, :, :], scores, -np.inf)
    heads = _softmax(scores) @ V
    return _merge(heads) @ W_o
# where: merge-without-transpose=18
