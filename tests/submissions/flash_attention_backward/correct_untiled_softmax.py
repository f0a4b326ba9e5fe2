# expect: 
# fails: tiling (whole matrices: exact, but they materialise the n x m scores)
import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    # no tiles at all: a fresh softmax over every key, D as rowsum(P * dP)
    n, m = Q.shape[-2], K.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if causal:
        S = np.where(np.tril(np.ones((n, m), dtype=bool), k=m - n), S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    P = np.exp(S)
    P = P / P.sum(axis=-1, keepdims=True)
    dV = np.swapaxes(P, -1, -2) @ grad_output
    dP = grad_output @ np.swapaxes(V, -1, -2)
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))
    dQ = dS @ K / np.sqrt(Q.shape[-1])
    dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(Q.shape[-1])
    return dQ, dK, dV
