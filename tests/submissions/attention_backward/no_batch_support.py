# expect: no-batch-support
import numpy as np


def attention_backward(grad_output, Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    P = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = P / P.sum(axis=-1, keepdims=True)
    dV = P.T @ grad_output
    dP = grad_output @ V.T
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))
    dQ = dS @ K / np.sqrt(d_k)
    dK = dS.T @ Q / np.sqrt(d_k)
    return dQ, dK, dV
