# expect:
import numpy as np


def _tables(max_len, d, theta):
    inv = 1.0 / (theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    t = np.arange(max_len, dtype=np.float64)
    freqs = np.outer(t, inv)
    return np.cos(freqs), np.sin(freqs)


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2], x.shape[-1]
    positions = np.arange(n) if positions is None else positions
    cos, sin = _tables(int(np.max(positions)) + 1, d, theta)
    cos, sin = cos[positions], sin[positions]
    cos, sin = np.repeat(cos, 2, axis=-1), np.repeat(sin, 2, axis=-1)
    rotated = np.empty_like(x)
    rotated[..., 0::2] = -x[..., 1::2]
    rotated[..., 1::2] = x[..., 0::2]
    return x * cos + rotated * sin
