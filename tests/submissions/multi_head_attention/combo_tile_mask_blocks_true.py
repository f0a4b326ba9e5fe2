# expect: mask-inverted mask-misbroadcast
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Heads folded into the batch axis, as fused kernels want; the mask follows PyTorch's
    nn.MultiheadAttention (True = do not attend) and is tiled once per head."""
    X_q, X_kv = np.asarray(X_q), np.asarray(X_kv)
    batched = X_q.ndim == 3
    if not batched:
        X_q, X_kv = X_q[None], X_kv[None]
        mask = None if mask is None else np.asarray(mask)[None]
    B, n, d_model = X_q.shape
    m = X_kv.shape[1]
    h, d_k = num_heads, d_model // num_heads

    def fold(x, length):  # (B, L, d_model) -> (B * h, L, d_k), batch-major
        return x.reshape(B, length, h, d_k).transpose(0, 2, 1, 3).reshape(B * h, length, d_k)

    q, k, v = fold(X_q @ W_q, n), fold(X_kv @ W_k, m), fold(X_kv @ W_v, m)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_k)
    if mask is not None:
        mask = np.broadcast_to(mask, (B, n, m))
        blocked = np.tile(mask, (h, 1, 1))  # head-major: should be np.repeat(mask, h, axis=0)
        scores = np.where(blocked, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    out = (weights @ v).reshape(B, h, n, d_k).transpose(0, 2, 1, 3).reshape(B, n, d_model)
    out = out @ W_o
    return out if batched else out[0]
# where: mask-inverted=25
