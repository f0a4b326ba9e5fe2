# expect: rope-rotation-reversed
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2:]
    positions = np.arange(n) if positions is None else positions
    freqs = theta ** (-np.arange(0, d, 2) / d)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(-1j * np.outer(positions, freqs))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
