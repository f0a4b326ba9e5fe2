# expect: dx-paths-merged
import numpy as np


def linear_backward(x, w, dy):
    """dX and dW of y = x @ w, the weight's gradient summed over every row."""
    dx = dy @ w.T
    dw = x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
    return dx, dw


def multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    *lead, n, d_model = X_q.shape
    m = X_kv.shape[-2]
    d_k = d_model // num_heads

    def heads(x, length):
        return x.reshape(*lead, length, num_heads, d_k).swapaxes(-2, -3)

    def merge(x, length):
        return x.swapaxes(-2, -3).reshape(*lead, length, d_model)

    Q, K, V = heads(X_q @ W_q, n), heads(X_kv @ W_k, m), heads(X_kv @ W_v, m)
    S = Q @ K.swapaxes(-1, -2) / np.sqrt(d_k)
    if mask is not None:
        S = np.where(np.asarray(mask)[..., None, :, :], S, -np.inf)
    P = np.exp(S - S.max(-1, keepdims=True))
    P = P / P.sum(-1, keepdims=True)
    C = merge(P @ V, n)
    dC, dW_o = linear_backward(C, W_o, grad_output)
    dO = heads(dC, n)
    dP = dO @ V.swapaxes(-1, -2)
    dS = P * (dP - (P * dP).sum(-1, keepdims=True))
    dQ = merge(dS @ K / np.sqrt(d_k), n)
    dK = merge(dS.swapaxes(-1, -2) @ Q / np.sqrt(d_k), m)
    dV = merge(P.swapaxes(-1, -2) @ dO, m)
    dX_q, dW_q = linear_backward(X_q, W_q, dQ)
    dX_k, dW_k = linear_backward(X_kv, W_k, dK)
    dX_v, dW_v = linear_backward(X_kv, W_v, dV)
    dX_q = dX_kv = dX_q + dX_k + dX_v
    return dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o
