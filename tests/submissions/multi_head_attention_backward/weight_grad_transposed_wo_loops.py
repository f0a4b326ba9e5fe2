# expect: weight-grad-transposed
import numpy as np


def head_backward(dO, q, k, v, mask):
    d_k = q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -1e9)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    out = p @ v
    dv = np.swapaxes(p, -1, -2) @ dO
    dp = dO @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
    dq = ds @ k / np.sqrt(d_k)
    dk = np.swapaxes(ds, -1, -2) @ q / np.sqrt(d_k)
    return out, dq, dk, dv


def multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    d_model = X_q.shape[-1]
    d_k = d_model // num_heads
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    dC = grad_output @ W_o.T
    C = np.zeros(Q.shape)
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        out, dq, dk, dv = head_backward(dC[..., cols], Q[..., cols], K[..., cols],
                                        V[..., cols], mask)
        C[..., cols] = out
        dQ[..., cols] = dq
        dK[..., cols] = dk
        dV[..., cols] = dv
    flat = lambda a: a.reshape(-1, d_model)
    dW_o = flat(grad_output).T @ flat(C)
    dW_q = flat(X_q).T @ flat(dQ)
    dW_k = flat(X_kv).T @ flat(dK)
    dW_v = flat(X_kv).T @ flat(dV)
    dX_q = dQ @ W_q.T
    dX_kv = dK @ W_k.T + dV @ W_v.T
    return dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o
