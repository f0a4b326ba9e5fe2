# expect: rope-frequency-missing-two
import math

import numpy as np


def rope(x, positions=None, theta=10000.0):
    out = np.array(x, dtype=float)
    n, d = out.shape[-2:]
    for t in range(n):
        p = t if positions is None else positions[t]
        for i in range(d // 2):
            a = p * theta ** (-i / d)
            x1, x2 = x[..., t, 2 * i], x[..., t, 2 * i + 1]
            out[..., t, 2 * i] = x1 * math.cos(a) - x2 * math.sin(a)
            out[..., t, 2 * i + 1] = x1 * math.sin(a) + x2 * math.cos(a)
    return out
