# expect: causal-mask-blocks-self
import math

import numpy as np


def rotate(x, theta):
    n, d = x.shape
    out = x.copy()
    for t in range(n):
        for i in range(d // 2):
            a = t * theta ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            out[t, 2 * i] = x[t, 2 * i] * c - x[t, 2 * i + 1] * s
            out[t, 2 * i + 1] = x[t, 2 * i] * s + x[t, 2 * i + 1] * c
    return out


def one_sequence(X, W_q, W_k, W_v, W_o, h, theta):
    n, d_model = X.shape
    d_k = d_model // h
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    outputs = []
    for head in range(h):
        cols = slice(head * d_k, (head + 1) * d_k)
        q, k, v = Q[:, cols], K[:, cols], V[:, cols]
        if theta is not None:
            q, k = rotate(q, theta), rotate(k, theta)
        s = q @ k.T / math.sqrt(d_k)
        future = np.triu(np.ones((n, n), dtype=bool), k=0)
        s = np.where(future, -1e9, s)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        outputs.append(w @ v)
    return np.concatenate(outputs, axis=-1) @ W_o


def causal_self_attention(X, W_q, W_k, W_v, W_o, num_heads, theta=None):
    X = np.asarray(X)
    if X.ndim == 2:
        return one_sequence(X, W_q, W_k, W_v, W_o, num_heads, theta)
    return np.stack([causal_self_attention(x, W_q, W_k, W_v, W_o, num_heads, theta) for x in X])
# where: causal-mask-blocks-self=30
