# expect: causal-mask-missing
import numpy as np


def _rope(x, theta):
    n, d = x.shape[-2], x.shape[-1]
    angles = np.arange(n)[:, None] * theta ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out


def _split(x, h):
    *batch, n, d_model = x.shape
    return np.swapaxes(x.reshape(*batch, n, h, d_model // h), -2, -3)


def causal_self_attention(X, W_q, W_k, W_v, W_o, num_heads, theta=None):
    *batch, n, d_model = X.shape
    q = _split(X @ W_q, num_heads)
    k = _split(X @ W_k, num_heads)
    v = _split(X @ W_v, num_heads)
    if theta is not None:
        q, k = _rope(q, theta), _rope(k, theta)
    scores = np.einsum('...id,...jd->...ij', q, k) * q.shape[-1] ** -0.5
    mask = np.triu(np.full((n, n), -1e9), k=1)
    scores + mask
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    heads = np.swapaxes(weights @ v, -2, -3).reshape(*batch, n, d_model)
    return heads @ W_o
# where: causal-mask-missing=30
