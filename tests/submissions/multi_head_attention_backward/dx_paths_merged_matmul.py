# expect: dx-paths-merged
import numpy as np


def split_heads(x, h):
    *lead, n, d = x.shape
    return np.swapaxes(x.reshape(*lead, n, h, d // h), -2, -3)


def merge_heads(x):
    *lead, h, n, d_k = x.shape
    return np.swapaxes(x, -2, -3).reshape(*lead, n, h * d_k)


def multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    d_model = X_q.shape[-1]
    d_k = d_model // num_heads
    Q = split_heads(X_q @ W_q, num_heads)
    K = split_heads(X_kv @ W_k, num_heads)
    V = split_heads(X_kv @ W_v, num_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(np.expand_dims(mask, -3), scores, -np.inf)
    P = np.exp(scores - scores.max(axis=-1, keepdims=True))
    P = P / P.sum(axis=-1, keepdims=True)
    C = merge_heads(P @ V)
    dW_o = C.reshape(-1, d_model).T @ grad_output.reshape(-1, d_model)
    dC = split_heads(grad_output @ W_o.T, num_heads)
    dV = np.swapaxes(P, -1, -2) @ dC
    dP = dC @ np.swapaxes(V, -1, -2)
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))
    dQ = merge_heads(dS @ K / np.sqrt(d_k))
    dK = merge_heads(np.swapaxes(dS, -1, -2) @ Q / np.sqrt(d_k))
    dV = merge_heads(dV)
    dW_q = X_q.reshape(-1, d_model).T @ dQ.reshape(-1, d_model)
    dW_k = X_kv.reshape(-1, d_model).T @ dK.reshape(-1, d_model)
    dW_v = X_kv.reshape(-1, d_model).T @ dV.reshape(-1, d_model)
    dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T
    dX_q = dX_kv = dX
    return dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o
# where: dx-paths-merged=39
