# expect: rope-rotation-reversed
import math

import numpy as np


def rope(x, positions=None, theta=10000.0):
    out = np.array(x, dtype=float)
    n, d = out.shape[-2:]
    for t in range(n):
        p = t if positions is None else positions[t]
        for i in range(d // 2):
            a = -p * theta ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            x1, x2 = x[..., t, 2 * i], x[..., t, 2 * i + 1]
            out[..., t, 2 * i], out[..., t, 2 * i + 1] = x1 * c - x2 * s, x1 * s + x2 * c
    return out
