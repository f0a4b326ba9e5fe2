# expect: 
import numpy as np


def multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    f = np.float32
    dY, xq, xkv = (np.asarray(a, dtype=f) for a in (grad_output, X_q, X_kv))
    wq, wk, wv, wo = (np.asarray(w, dtype=f) for w in (W_q, W_k, W_v, W_o))
    *lead, n, d_model = xq.shape
    m = xkv.shape[-2]
    d_k = d_model // num_heads
    scale = f(1.0 / np.sqrt(d_k))
    q = (xq @ wq).reshape(*lead, n, num_heads, d_k).transpose(*range(len(lead)), -2, -3, -1)
    k = (xkv @ wk).reshape(*lead, m, num_heads, d_k).transpose(*range(len(lead)), -2, -3, -1)
    v = (xkv @ wv).reshape(*lead, m, num_heads, d_k).transpose(*range(len(lead)), -2, -3, -1)
    s = (q @ k.transpose(*range(len(lead)), -3, -1, -2)) * scale
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], s, f(-1e30))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    c = (p @ v).transpose(*range(len(lead)), -2, -3, -1).reshape(*lead, n, d_model)
    back = tuple(range(len(lead)))
    d_c = (dY @ wo.T).reshape(*lead, n, num_heads, d_k).transpose(*back, -2, -3, -1)
    d_v = p.transpose(*back, -3, -1, -2) @ d_c
    d_p = d_c @ v.transpose(*back, -3, -1, -2)
    d_s = p * (d_p - np.sum(p * d_p, axis=-1, keepdims=True)) * scale
    d_q = (d_s @ k).transpose(*back, -2, -3, -1).reshape(*lead, n, d_model)
    d_k_ = (d_s.transpose(*back, -3, -1, -2) @ q).transpose(*back, -2, -3, -1).reshape(
        *lead, m, d_model)
    d_v = d_v.transpose(*back, -2, -3, -1).reshape(*lead, m, d_model)
    rows = lambda a: a.reshape(-1, d_model)
    dW_o = rows(c).T @ rows(dY)
    dW_q = rows(xq).T @ rows(d_q)
    dW_k = rows(xkv).T @ rows(d_k_)
    dW_v = rows(xkv).T @ rows(d_v)
    dX_q = d_q @ wq.T
    dX_kv = d_k_ @ wk.T + d_v @ wv.T
    return dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o
