import math

import numpy as np


def _attend_2d(q, k, v, mask):
    n, m = q.shape[0], k.shape[0]
    out = np.zeros((n, v.shape[1]))
    for i in range(n):
        scores = []
        for j in range(m):
            s = sum(q[i, t] * k[j, t] for t in range(q.shape[1])) / math.sqrt(q.shape[1])
            if mask is not None and not mask[i, j]:
                s = -1e4
            scores.append(s)
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        for j in range(m):
            out[i] += exps[j] / total * v[j]
    return out


def scaled_dot_product_attention(Q, K, V, mask=None):
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    out = np.zeros(batch + (Q.shape[-2], V.shape[-1]))
    full_mask = None if mask is None else np.broadcast_to(mask, batch + (Q.shape[-2], K.shape[-2]))
    for idx in np.ndindex(*batch):
        q = np.broadcast_to(Q, batch + Q.shape[-2:])[idx]
        k = np.broadcast_to(K, batch + K.shape[-2:])[idx]
        v = np.broadcast_to(V, batch + V.shape[-2:])[idx]
        out[idx] = _attend_2d(q, k, v, None if full_mask is None else full_mask[idx])
    return out
