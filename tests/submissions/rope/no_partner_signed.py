# expect: rope-no-rotation-partner
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2], x.shape[-1]
    p = np.arange(n) if positions is None else np.asarray(positions)
    angles = p[:, None] * theta ** (-np.arange(0, d, 2) / d)
    cos = np.repeat(np.cos(angles), 2, axis=-1)
    sin = np.repeat(np.sin(angles), 2, axis=-1)
    sin[..., 0::2] *= -1
    return x * cos + x * sin
