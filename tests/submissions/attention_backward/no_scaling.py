# expect: no-scaling
import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def attention_backward(grad_output, Q, K, V, mask=None):
    scale = 1.0
    S = np.einsum("...id,...jd->...ij", Q, K) * scale
    if mask is not None:
        S = S + (1.0 - mask) * -1e9
    P = softmax(S)
    O = np.einsum("...ij,...jd->...id", P, V)
    dV = np.einsum("...ij,...id->...jd", P, grad_output)
    dP = np.einsum("...id,...jd->...ij", grad_output, V)
    D = np.sum(grad_output * O, axis=-1, keepdims=True)
    dS = P * (dP - D)
    dQ = np.einsum("...ij,...jd->...id", dS, K) * scale
    dK = np.einsum("...ij,...id->...jd", dS, Q) * scale
    return dQ, dK, dV
