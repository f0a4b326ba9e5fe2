# expect:
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    f = np.float32
    X_q, X_kv = X_q.astype(f), X_kv.astype(f)
    d = X_q.shape[-1]
    d_k = d // num_heads
    q = (X_q @ W_q.astype(f)).reshape(*X_q.shape[:-1], num_heads, d_k)
    k = (X_kv @ W_k.astype(f)).reshape(*X_kv.shape[:-1], num_heads, d_k)
    v = (X_kv @ W_v.astype(f)).reshape(*X_kv.shape[:-1], num_heads, d_k)
    s = np.einsum("...nhd,...mhd->...hnm", q, k) / f(np.sqrt(d_k))
    if mask is not None:
        s = s + np.where(np.expand_dims(mask, -3), f(0), f(-1e9))
    s = s - s.max(-1, keepdims=True)
    w = np.exp(s)
    w /= w.sum(-1, keepdims=True)
    o = np.einsum("...hnm,...mhd->...nhd", w, v).reshape(*X_q.shape[:-1], d)
    return o @ W_o.astype(f), w
