# expect: scale-after-softmax scale-by-dmodel
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Lecture-style: the scale is applied to the attention map, by the model width."""
    *batch, n, d_model = X_q.shape
    m = X_kv.shape[-2]
    d_k = d_model // num_heads
    q = (X_q @ W_q).reshape(*batch, n, num_heads, d_k).swapaxes(-2, -3)
    k = (X_kv @ W_k).reshape(*batch, m, num_heads, d_k).swapaxes(-2, -3)
    v = (X_kv @ W_v).reshape(*batch, m, num_heads, d_k).swapaxes(-2, -3)
    scores = q @ k.swapaxes(-1, -2)
    if mask is not None:
        scores = np.where(np.expand_dims(mask, -3), scores, -np.inf)
    attn = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn = attn / attn.sum(axis=-1, keepdims=True)
    attn = attn / np.sqrt(d_model)
    out = (attn @ v).swapaxes(-2, -3).reshape(*batch, n, d_model)
    return out @ W_o
# where: scale-after-softmax=18 scale-by-dmodel=18
