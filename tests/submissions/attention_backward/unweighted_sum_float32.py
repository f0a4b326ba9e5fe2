# expect: softmax-backward-unweighted-sum
import numpy as np


def attention_backward(grad_output, Q, K, V, mask=None):
    dO, Q, K, V = (np.asarray(a, dtype=np.float32) for a in (grad_output, Q, K, V))
    d_k = Q.shape[-1]
    Qs = Q / np.float32(np.sqrt(d_k))
    S = Qs @ np.swapaxes(K, -1, -2)
    if mask is not None:
        S = np.where(mask, S, np.finfo(np.float32).min)
    S = S - S.max(axis=-1, keepdims=True)
    P = np.exp(S)
    P /= P.sum(axis=-1, keepdims=True)
    dV = np.swapaxes(P, -1, -2) @ dO
    dP = dO @ np.swapaxes(V, -1, -2)
    rows = np.sum(dP, axis=-1, keepdims=True)
    dS = P * (dP - rows) / np.float32(np.sqrt(d_k))
    dQ = dS @ K
    dK = np.swapaxes(dS, -1, -2) @ Q
    return dQ, dK, dV
