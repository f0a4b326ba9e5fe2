# expect: 
import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    # float32 throughout, Q scaled once before the loops, future tiles skipped
    dO = np.asarray(grad_output, dtype=np.float32)
    d = Q.shape[-1]
    Qs = np.asarray(Q, dtype=np.float32) * np.float32(1.0 / np.sqrt(d))
    K32, V32 = np.asarray(K, dtype=np.float32), np.asarray(V, dtype=np.float32)
    L32 = np.asarray(L, dtype=np.float32)
    D = np.sum(dO * np.asarray(O, dtype=np.float32), axis=-1)
    n, m = Qs.shape[-2], K32.shape[-2]
    dQ = np.zeros(Qs.shape, np.float32)
    dK = np.zeros(K32.shape, np.float32)
    dV = np.zeros(V32.shape, np.float32)
    for i in range(0, n, block_q):
        ie = min(i + block_q, n)
        for j in range(0, m, block_k):
            if causal and j > ie - 1 + m - n:
                break
            je = min(j + block_k, m)
            s = np.einsum("...qd,...kd->...qk", Qs[..., i:ie, :], K32[..., j:je, :])
            if causal:
                future = np.arange(j, je)[None, :] > np.arange(i, ie)[:, None] + (m - n)
                s = np.where(future, np.float32(-np.inf), s)
            p = np.exp(s - L32[..., i:ie, None])
            dV[..., j:je, :] += np.einsum("...qk,...qv->...kv", p, dO[..., i:ie, :])
            dp = np.einsum("...qv,...kv->...qk", dO[..., i:ie, :], V32[..., j:je, :])
            ds = p * (dp - D[..., i:ie, None])
            dQ[..., i:ie, :] += np.einsum("...qk,...kd->...qd", ds, K32[..., j:je, :]) / np.sqrt(d)
            dK[..., j:je, :] += np.einsum("...qk,...qd->...kd", ds, Qs[..., i:ie, :])
    return dQ, dK, dV
