# expect: unstable-softmax
import numpy as np


def _tiles(length, size):
    return [(start, min(start + size, length)) for start in range(0, length, size)]


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    O = np.zeros(Q.shape[:-1] + (V.shape[-1],))
    L = np.zeros(Q.shape[:-1])
    for a, b in _tiles(n, block_q):
        numerator = 0.0
        denominator = 0.0
        for c, e in _tiles(m, block_k):
            s = np.einsum("...qd,...kd->...qk", Q[..., a:b, :], K[..., c:e, :]) / np.sqrt(d)
            w = np.exp(s)
            if causal:
                w = w * (np.arange(c, e)[None, :] <= np.arange(a, b)[:, None] + (m - n))
            numerator = numerator + np.einsum("...qk,...kv->...qv", w, V[..., c:e, :])
            denominator = denominator + w.sum(axis=-1)
        O[..., a:b, :] = numerator / denominator[..., None]
        L[..., a:b] = np.log(denominator)
    return O, L
