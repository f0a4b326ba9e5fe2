# expect:
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """One stacked K/V projection, heads via transpose, -1e4 fill, averaged weights returned."""
    n, d_model = X_q.shape[-2], X_q.shape[-1]
    d_k = d_model // num_heads
    kv = X_kv @ np.concatenate([W_k, W_v], axis=1)
    k, v = kv[..., :d_model], kv[..., d_model:]

    def heads(x):
        return x.reshape(*x.shape[:-1], num_heads, d_k).transpose(
            *range(x.ndim - 2), x.ndim - 1, x.ndim - 2, x.ndim)

    q = heads(X_q @ W_q) * d_k ** -0.5
    scores = q @ heads(k).swapaxes(-1, -2)
    if mask is not None:
        scores = np.where(np.expand_dims(mask, -3), scores, -1e4)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    out = (weights @ heads(v)).swapaxes(-2, -3).reshape(*X_q.shape[:-2], n, d_model)
    return out @ W_o, weights.mean(axis=-3)
