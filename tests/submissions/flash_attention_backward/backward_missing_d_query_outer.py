# expect: backward-missing-d
import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    n = Q.shape[-2]
    m = K.shape[-2]
    d = Q.shape[-1]
    scale = 1.0 / np.sqrt(d)
    dQ = np.zeros_like(Q, dtype=np.float64)
    dK = np.zeros_like(K, dtype=np.float64)
    dV = np.zeros_like(V, dtype=np.float64)
    last = list(range(Q.ndim - 2)) + [Q.ndim - 1, Q.ndim - 2]
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        q = Q[..., i0:i1, :]
        do = grad_output[..., i0:i1, :]
        Di = (do * O[..., i0:i1, :]).sum(-1, keepdims=True)
        Li = L[..., i0:i1][..., None]
        dq = np.zeros(q.shape)
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            k = K[..., j0:j1, :]
            v = V[..., j0:j1, :]
            s = np.matmul(q, k.transpose(last)) * scale
            if causal:
                r = np.arange(i0, i1)[:, None]
                c = np.arange(j0, j1)[None, :]
                s = np.where(c <= r + (m - n), s, -1e6)
            p = np.exp(s - Li)
            dV[..., j0:j1, :] += np.matmul(p.transpose(last), do)
            dp = np.matmul(do, v.transpose(last))
            ds = p * dp
            dq += np.matmul(ds, k) * scale
            dK[..., j0:j1, :] += np.matmul(ds.transpose(last), q) * scale
        dQ[..., i0:i1, :] = dq
    return dQ, dK, dV
# where: backward-missing-d=33
