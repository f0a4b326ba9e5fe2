# expect: causal-mask-top-left
import numpy as np


def _tile_weights(Q, K, L, i0, i1, j0, j1, n, m, causal):
    s = Q[..., i0:i1, :] @ np.swapaxes(K[..., j0:j1, :], -1, -2) / np.sqrt(Q.shape[-1])
    if causal:
        keep = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]
        return np.exp(s - L[..., i0:i1, None]) * keep
    return np.exp(s - L[..., i0:i1, None])


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    # D from a first pass over the key tiles, as rowsum(P * dP), then a second pass
    n, m = Q.shape[-2], K.shape[-2]
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        dO = grad_output[..., i0:i1, :]
        D = np.zeros(dO.shape[:-1])
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            P = _tile_weights(Q, K, L, i0, i1, j0, j1, n, m, causal)
            D += np.sum(P * (dO @ np.swapaxes(V[..., j0:j1, :], -1, -2)), axis=-1)
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            P = _tile_weights(Q, K, L, i0, i1, j0, j1, n, m, causal)
            dV[..., j0:j1, :] += np.swapaxes(P, -1, -2) @ dO
            dS = P * (dO @ np.swapaxes(V[..., j0:j1, :], -1, -2) - D[..., None])
            dQ[..., i0:i1, :] += dS @ K[..., j0:j1, :] / np.sqrt(Q.shape[-1])
            dK[..., j0:j1, :] += np.swapaxes(dS, -1, -2) @ Q[..., i0:i1, :] / np.sqrt(Q.shape[-1])
    return (dQ, dK, dV)
