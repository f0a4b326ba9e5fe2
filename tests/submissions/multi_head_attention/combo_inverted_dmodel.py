# expect: mask-inverted scale-by-dmodel
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    d_model = X_q.shape[-1]
    d_k = d_model // num_heads

    def split(x):
        return np.swapaxes(x.reshape(*x.shape[:-1], num_heads, d_k), -3, -2)

    q, k, v = split(X_q @ W_q), split(X_kv @ W_k), split(X_kv @ W_v)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)
    if mask is not None:
        s = np.where(np.expand_dims(mask, -3), -1e9, s)  # "mask" = positions to hide
    s = s - s.max(-1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(-1, keepdims=True)
    heads = np.swapaxes(a @ v, -3, -2)
    return heads.reshape(*heads.shape[:-2], d_model) @ W_o
# where: mask-inverted=15 scale-by-dmodel=13
