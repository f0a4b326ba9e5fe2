# expect: softmax-backward-unweighted-sum
import numpy as np
from scipy.special import logsumexp


def attention_backward(grad_output, Q, K, V, mask=None):
    d_k = Q.shape[-1]
    S = np.matmul(Q, np.swapaxes(K, -1, -2)) / d_k ** 0.5
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    P = np.exp(S - logsumexp(S, axis=-1, keepdims=True))
    dV = np.matmul(np.swapaxes(P, -1, -2), grad_output)
    dP = np.matmul(grad_output, np.swapaxes(V, -1, -2))
    dS = P * dP - P * np.sum(dP, axis=-1, keepdims=True)
    dS = dS / d_k ** 0.5
    dQ = np.matmul(dS, K)
    dK = np.matmul(np.swapaxes(dS, -1, -2), Q)
    return [dQ, dK, dV]
