# expect: backward-missing-scale scale-by-dk
import numpy as np


def attention_backward(grad_output, Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / d_k
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    P = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = P / P.sum(axis=-1, keepdims=True)
    dV = np.swapaxes(P, -1, -2) @ grad_output
    dP = grad_output @ np.swapaxes(V, -1, -2)
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))
    dQ = dS @ K
    dK = np.swapaxes(dS, -1, -2) @ Q
    return dQ, dK, dV
