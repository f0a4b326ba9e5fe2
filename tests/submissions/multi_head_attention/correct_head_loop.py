# expect:
import numpy as np


def attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -1e9)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    d_k = Q.shape[-1] // num_heads
    heads = []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        heads.append(attention(Q[..., cols], K[..., cols], V[..., cols], mask))
    return np.concatenate(heads, axis=-1) @ W_o
