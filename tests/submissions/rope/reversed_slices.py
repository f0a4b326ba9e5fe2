# expect: rope-rotation-reversed
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2], x.shape[-1]
    p = np.arange(n) if positions is None else np.asarray(positions)
    angles = p[:, None] * theta ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x1 * cos + x2 * sin
    out[..., 1::2] = x2 * cos - x1 * sin
    return out
