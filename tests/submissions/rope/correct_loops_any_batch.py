# expect:
import numpy as np


def rope(x, positions=None, theta=10000.0):
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2], x.shape[-1]
    positions = np.arange(n) if positions is None else np.asarray(positions)
    out = np.zeros(x.shape)
    for t in range(n):
        for i in range(d // 2):
            a = positions[t] * theta ** (-2 * i / d)
            c, s = np.cos(a), np.sin(a)
            x1, x2 = x[..., t, 2 * i], x[..., t, 2 * i + 1]
            out[..., t, 2 * i] = x1 * c - x2 * s
            out[..., t, 2 * i + 1] = x1 * s + x2 * c
    return out
