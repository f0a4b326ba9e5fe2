# expect: heads-not-split projection-transposed
import numpy as np


def linear(x, weight):
    """Like torch.nn.functional.linear: weight is (out_features, in_features)."""
    return x @ weight.T


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    q, k, v = linear(X_q, W_q), linear(X_kv, W_k), linear(X_kv, W_v)
    d_k = q.shape[-1] // num_heads
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    attn = np.exp(scores)
    attn /= attn.sum(axis=-1, keepdims=True)
    return linear(attn @ v, W_o)
# where: heads-not-split=13 projection-transposed=7
