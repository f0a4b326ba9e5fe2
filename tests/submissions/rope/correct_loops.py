# expect:
import math

import numpy as np


def rope(x, positions=None, theta=10000.0):
    x = np.asarray(x, dtype=float)
    out = x.copy()
    n, d = x.shape[-2], x.shape[-1]
    for t in range(n):
        p = t if positions is None else positions[t]
        for i in range(d // 2):
            a = p * theta ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            out[..., t, 2 * i] = x[..., t, 2 * i] * c - x[..., t, 2 * i + 1] * s
            out[..., t, 2 * i + 1] = x[..., t, 2 * i] * s + x[..., t, 2 * i + 1] * c
    return out
