# expect: softmax-backward-diagonal-only
import numpy as np


def _one(dO, q, k, v, mask):
    n, d_k = q.shape
    m = k.shape[0]
    s = q @ k.T / np.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -1e9)
    p = np.zeros((n, m))
    ds = np.zeros((n, m))
    dp = dO @ v.T
    for i in range(n):
        row = np.exp(s[i] - s[i].max())
        p[i] = row / row.sum()
        jacobian = np.diag(p[i])
        ds[i] = jacobian @ dp[i]
    dv = p.T @ dO
    dq = ds @ k / np.sqrt(d_k)
    dk = ds.T @ q / np.sqrt(d_k)
    return dq, dk, dv


def attention_backward(grad_output, Q, K, V, mask=None):
    lead = Q.shape[:-2]
    if mask is not None:
        mask = np.broadcast_to(mask, lead + (Q.shape[-2], K.shape[-2]))
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for index in np.ndindex(*lead):
        m = None if mask is None else mask[index]
        dQ[index], dK[index], dV[index] = _one(grad_output[index], Q[index], K[index], V[index], m)
    return dQ, dK, dV
