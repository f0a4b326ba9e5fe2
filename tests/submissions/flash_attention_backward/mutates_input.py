# expect: mutates-input
import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    n, m = Q.shape[-2], K.shape[-2]
    Q *= 1.0 / np.sqrt(Q.shape[-1])  # scaled in place, once
    D = (grad_output * O).sum(-1)
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            S = Q[..., i0:i1, :] @ np.swapaxes(K[..., j0:j1, :], -1, -2)
            if causal:
                S = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None] + m - n, S, -np.inf)
            P = np.exp(S - L[..., i0:i1, None])
            dV[..., j0:j1, :] += np.swapaxes(P, -1, -2) @ grad_output[..., i0:i1, :]
            dS = P * (grad_output[..., i0:i1, :] @ np.swapaxes(V[..., j0:j1, :], -1, -2)
                      - D[..., i0:i1, None])
            dQ[..., i0:i1, :] += dS @ K[..., j0:j1, :] / np.sqrt(Q.shape[-1])
            dK[..., j0:j1, :] += np.swapaxes(dS, -1, -2) @ Q[..., i0:i1, :]
    return dQ, dK, dV
