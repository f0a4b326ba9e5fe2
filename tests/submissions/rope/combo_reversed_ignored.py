# expect: rope-positions-ignored rope-rotation-reversed
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2], x.shape[-1]
    angles = np.arange(n)[:, None] * theta ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return np.stack([x1 * cos + x2 * sin, x2 * cos - x1 * sin], axis=-1).reshape(x.shape)
