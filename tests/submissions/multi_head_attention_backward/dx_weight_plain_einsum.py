# expect: dx-weight-not-transposed
import numpy as np


def multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    *lead, n, d_model = X_q.shape
    m = X_kv.shape[-2]
    h = num_heads
    d_k = d_model // h
    q = (X_q @ W_q).reshape(*lead, n, h, d_k)
    k = (X_kv @ W_k).reshape(*lead, m, h, d_k)
    v = (X_kv @ W_v).reshape(*lead, m, h, d_k)
    s = np.einsum("...nhd,...mhd->...hnm", q, k) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(np.asarray(mask)[..., None, :, :], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    c = np.einsum("...hnm,...mhd->...nhd", p, v).reshape(*lead, n, d_model)
    rows = lambda a: a.reshape(-1, d_model)
    dW_o = np.einsum("ni,nj->ij", rows(c), rows(grad_output))
    dc = np.einsum("...nj,ji->...ni", grad_output, W_o).reshape(*lead, n, h, d_k)
    dv = np.einsum("...hnm,...nhd->...mhd", p, dc)
    dp = np.einsum("...nhd,...mhd->...hnm", dc, v)
    ds = p * (dp - np.einsum("...nm,...nm->...n", p, dp)[..., None])
    dq = np.einsum("...hnm,...mhd->...nhd", ds, k) / np.sqrt(d_k)
    dk = np.einsum("...hnm,...nhd->...mhd", ds, q) / np.sqrt(d_k)
    dq = dq.reshape(*lead, n, d_model)
    dk = dk.reshape(*lead, m, d_model)
    dv = dv.reshape(*lead, m, d_model)
    dW_q = np.einsum("ni,nj->ij", rows(X_q), rows(dq))
    dW_k = np.einsum("mi,mj->ij", rows(X_kv), rows(dk))
    dW_v = np.einsum("mi,mj->ij", rows(X_kv), rows(dv))
    dX_q = np.einsum("...nj,ij->...ni", dq, W_q)
    dX_kv = np.einsum("...mj,ij->...mi", dk, W_k) + np.einsum("...mj,ij->...mi", dv, W_v)
    return dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o
