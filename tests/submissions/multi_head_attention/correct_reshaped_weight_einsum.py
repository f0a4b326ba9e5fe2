# expect:
import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Weights viewed as (d_model, heads, d_k): the heads come straight out of einsum."""
    d_model = W_q.shape[0]
    d_k = d_model // num_heads
    q = np.einsum("...nd,dhk->...hnk", X_q, W_q.reshape(d_model, num_heads, d_k))
    k = np.einsum("...md,dhk->...hmk", X_kv, W_k.reshape(d_model, num_heads, d_k))
    v = np.einsum("...md,dhk->...hmk", X_kv, W_v.reshape(d_model, num_heads, d_k))
    s = np.einsum("...hnk,...hmk->...hnm", q, k) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(np.expand_dims(mask, -3), s, -1e9)
    s = s - s.max(-1, keepdims=True)
    a = np.exp(s)
    a = a / a.sum(-1, keepdims=True)
    heads = np.einsum("...hnm,...hmk->...nhk", a, v)
    merged = heads.reshape(*heads.shape[:-2], d_model)
    return merged @ W_o
