# expect:
import math

import numpy as np


def softmax_rows(s):
    out = np.empty_like(s)
    for i, row in enumerate(s):
        top = row.max()
        e = np.array([math.exp(v - top) for v in row])
        out[i] = e / e.sum()
    return out


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    batch = Q.shape[:-2]
    d_model = Q.shape[-1]
    d_k = d_model // num_heads
    out = np.zeros(batch + (Q.shape[-2], d_model))
    full = None if mask is None else np.broadcast_to(mask, batch + (Q.shape[-2], K.shape[-2]))
    for idx in np.ndindex(*batch):
        for h in range(num_heads):
            cols = slice(h * d_k, (h + 1) * d_k)
            s = Q[idx][:, cols] @ K[idx][:, cols].T / math.sqrt(d_k)
            if full is not None:
                s = s + np.where(full[idx], 0.0, -1e9)
            out[idx][:, cols] = softmax_rows(s) @ V[idx][:, cols]
    return out @ W_o
