# expect: tile-local-softmax
import numpy as np


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    out = np.zeros(Q.shape[:-1] + V.shape[-1:])
    lse = np.full(Q.shape[:-1], -np.inf)
    for j0 in range(0, m, block_k):
        j1 = min(j0 + block_k, m)
        for i0 in range(0, n, block_q):
            i1 = min(i0 + block_q, n)
            s = np.einsum("...id,...jd->...ij", Q[..., i0:i1, :], K[..., j0:j1, :]) / np.sqrt(d)
            if causal:
                keep = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None] + m - n
                if not keep.any():
                    continue
                s = np.where(keep, s, -np.inf)
            top = s.max(-1, keepdims=True)
            e = np.exp(s - top)
            total = e.sum(-1, keepdims=True)
            out[..., i0:i1, :] += np.einsum("...ij,...jv->...iv", e / total, V[..., j0:j1, :])
            lse[..., i0:i1] = np.logaddexp(lse[..., i0:i1], (top + np.log(total))[..., 0])
    return out, lse
