# expect: backward-missing-d
import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    scale = 1.0 / np.sqrt(d)
    q_tiles = [(s, min(s + block_q, n)) for s in range(0, n, block_q)]
    k_tiles = [(s, min(s + block_k, m)) for s in range(0, m, block_k)]
    delta = np.einsum("...iv,...iv->...i", grad_output, O)
    grads = [np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)]
    for a, b in q_tiles:
        for c, e in k_tiles:
            logits = np.einsum("...id,...jd->...ij", Q[..., a:b, :], K[..., c:e, :]) * scale
            if causal:
                keep = np.arange(c, e)[None, :] <= np.arange(a, b)[:, None] + (m - n)
                logits = np.where(keep, logits, -1e9)
            w = np.exp(logits - L[..., a:b, None])
            grads[2][..., c:e, :] += np.einsum("...ij,...iv->...jv", w, grad_output[..., a:b, :])
            dw = np.einsum("...iv,...jv->...ij", grad_output[..., a:b, :], V[..., c:e, :])
            dlogits = w * dw
            grads[0][..., a:b, :] += np.einsum("...ij,...jd->...id", dlogits, K[..., c:e, :]) * scale
            grads[1][..., c:e, :] += np.einsum("...ij,...id->...jd", dlogits, Q[..., a:b, :]) * scale
    return grads
# where: backward-missing-d=21
