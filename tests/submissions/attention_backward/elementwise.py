# expect: softmax-backward-elementwise
import numpy as np


def attention_backward(grad_output, Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    P = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = P / P.sum(axis=-1, keepdims=True)
    dV = np.swapaxes(P, -1, -2) @ grad_output
    dP = grad_output @ np.swapaxes(V, -1, -2)
    dS = dP * P * (1 - P)
    dQ = dS @ K / np.sqrt(d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(d_k)
    return dQ, dK, dV
# where: softmax-backward-elementwise=14
