# expect: no-batch-support
import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    n, d = Q.shape
    m = K.shape[0]
    D = (grad_output * O).sum(axis=1)
    dQ, dK, dV = np.zeros((n, d)), np.zeros(K.shape), np.zeros(V.shape)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            S = Q[i0:i1] @ K[j0:j1].T / np.sqrt(d)
            if causal:
                S = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None] + m - n, S, -np.inf)
            P = np.exp(S - L[i0:i1, None])
            dV[j0:j1] += P.T @ grad_output[i0:i1]
            dS = P * (grad_output[i0:i1] @ V[j0:j1].T - D[i0:i1, None])
            dQ[i0:i1] += dS @ K[j0:j1] / np.sqrt(d)
            dK[j0:j1] += dS.T @ Q[i0:i1] / np.sqrt(d)
    return dQ, dK, dV
