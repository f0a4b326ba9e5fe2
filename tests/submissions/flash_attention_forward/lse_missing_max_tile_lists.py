# expect: lse-missing-max
import numpy as np


def _tiles(length, size):
    return [(start, min(start + size, length)) for start in range(0, length, size)]


def _attend(q, k, v, causal, block_q, block_k):
    n, m, d = q.shape[0], k.shape[0], q.shape[1]
    out = np.zeros((n, v.shape[1]))
    lse = np.zeros(n)
    for a, b in _tiles(n, block_q):
        o, total, top = None, None, None
        for c, e in _tiles(m, block_k):
            s = q[a:b] @ k[c:e].T / np.sqrt(d)
            if causal:
                future = np.arange(c, e)[None, :] > np.arange(a, b)[:, None] + (m - n)
                s = s + np.where(future, -np.inf, 0.0)
            tile_max = s.max(axis=1)
            if top is None:
                top = tile_max
                p = np.exp(s - top[:, None])
                total = p.sum(axis=1)
                o = p @ v[c:e]
                continue
            new_top = np.maximum(top, tile_max)
            alpha = np.exp(top - new_top)
            p = np.exp(s - new_top[:, None])
            total = alpha * total + p.sum(axis=1)
            o = np.diag(alpha) @ o + p @ v[c:e]
            top = new_top
        out[a:b] = o / total[:, None]
        lse[a:b] = np.log(total)
    return out, lse


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    lead = Q.shape[:-2]
    q = Q.reshape((-1,) + Q.shape[-2:])
    k = K.reshape((-1,) + K.shape[-2:])
    v = V.reshape((-1,) + V.shape[-2:])
    pairs = [_attend(q[b], k[b], v[b], causal, block_q, block_k) for b in range(q.shape[0])]
    O = np.stack([o for o, _ in pairs]).reshape(lead + (Q.shape[-2], V.shape[-1]))
    L = np.stack([l for _, l in pairs]).reshape(lead + (Q.shape[-2],))
    return O, L
# where: lse-missing-max=34
