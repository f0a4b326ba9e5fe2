# expect:
# After a first edit: the queries are reshaped to (n, h, d_model), twice too many values.
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    n, d_model = X_q.shape[-2:]
    d_k = d_model // num_heads
    q = (X_q @ W_q).reshape(n, num_heads, d_model).swapaxes(0, 1)
    k = (X_kv @ W_k).reshape(-1, num_heads, d_k).swapaxes(0, 1)
    v = (X_kv @ W_v).reshape(-1, num_heads, d_k).swapaxes(0, 1)
    s = q @ k.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -1e9)
    w = np.exp(s - s.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return (w @ v).swapaxes(0, 1).reshape(n, d_model) @ W_o
