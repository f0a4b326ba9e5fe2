# expect: rope-halves-not-interleaved
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2], x.shape[-1]
    p = np.arange(n) if positions is None else np.asarray(positions)
    a = p[:, None] * theta ** (-np.arange(0, d, 2) / d)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * np.cos(a) - x2 * np.sin(a), x1 * np.sin(a) + x2 * np.cos(a)], axis=-1)
