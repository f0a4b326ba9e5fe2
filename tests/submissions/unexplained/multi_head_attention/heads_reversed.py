# located: merged
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    d_model = X_q.shape[-1]
    d_k = d_model // num_heads
    outputs = []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        q = X_q @ W_q[:, cols]
        k = X_kv @ W_k[:, cols]
        v = X_kv @ W_v[:, cols]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        a = np.exp(s - s.max(axis=-1, keepdims=True))
        a = a / a.sum(axis=-1, keepdims=True)
        outputs.append(a @ v)
    merged = np.concatenate(outputs[::-1], axis=-1)  # heads in the wrong order
    return merged @ W_o
