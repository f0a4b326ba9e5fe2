# expect: lse-max-only
import numpy as np


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    Qs = Q / np.sqrt(d)
    row_max = np.full(Q.shape[:-1], -np.inf)
    row_sum = np.zeros(Q.shape[:-1])
    out = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for j0 in range(0, m, block_k):
        j1 = min(j0 + block_k, m)
        for i0 in range(0, n, block_q):
            i1 = min(i0 + block_q, n)
            s = np.einsum("...id,...jd->...ij", Qs[..., i0:i1, :], K[..., j0:j1, :])
            if causal:
                keep = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None] + m - n
                s = np.where(keep, s, -1e9)
            old = row_max[..., i0:i1]
            new = np.maximum(old, s.max(-1))
            alpha = np.exp(old - new)
            p = np.exp(s - new[..., None])
            row_sum[..., i0:i1] = alpha * row_sum[..., i0:i1] + p.sum(-1)
            pv = np.einsum("...ij,...jv->...iv", p, V[..., j0:j1, :])
            out[..., i0:i1, :] = alpha[..., None] * out[..., i0:i1, :] + pv
            row_max[..., i0:i1] = new
    O = out / row_sum[..., None]
    L = row_max
    return O, L
# where: lse-max-only=28
