# expect: causal-mask-missing rope-before-head-split rope-on-values
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
    """Three mistakes at once: no causal mask, RoPE on the full projections, values rotated."""
    *batch, n, d_model = X.shape
    q, k, v = X @ W_q, X @ W_k, X @ W_v
    if theta is not None:
        q, k, v = _rope(q, theta), _rope(k, theta), _rope(v, theta)
    q, k, v = _split(q, num_heads), _split(k, num_heads), _split(v, num_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    heads = np.swapaxes(weights @ v, -2, -3).reshape(*batch, n, d_model)
    return heads @ W_o
