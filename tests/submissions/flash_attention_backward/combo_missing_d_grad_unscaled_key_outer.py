# expect: backward-grad-unscaled backward-missing-d
import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    scale = 1.0 / np.sqrt(d)
    D = np.sum(grad_output * O, axis=-1)
    dQ = np.zeros(Q.shape)
    dK = np.zeros(K.shape)
    dV = np.zeros(V.shape)
    for j0 in range(0, m, block_k):
        j1 = min(j0 + block_k, m)
        Kj, Vj = K[..., j0:j1, :], V[..., j0:j1, :]
        for i0 in range(0, n, block_q):
            i1 = min(i0 + block_q, n)
            Qi, dOi = Q[..., i0:i1, :], grad_output[..., i0:i1, :]
            S = Qi @ np.swapaxes(Kj, -1, -2) * scale
            if causal:
                rows = np.arange(i0, i1)[:, None]
                cols = np.arange(j0, j1)[None, :]
                S = np.where(cols <= rows + (m - n), S, -np.inf)
            P = np.exp(S - L[..., i0:i1, None])
            dV[..., j0:j1, :] += np.swapaxes(P, -1, -2) @ dOi
            dP = dOi @ np.swapaxes(Vj, -1, -2)
            dS = P * dP
            dQ[..., i0:i1, :] += dS @ Kj
            dK[..., j0:j1, :] += np.swapaxes(dS, -1, -2) @ Qi
    return dQ, dK, dV
# where: backward-missing-d=26 backward-grad-unscaled=27
