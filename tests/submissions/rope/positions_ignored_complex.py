# expect: rope-positions-ignored
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2:]
    freqs = theta ** (-np.arange(0, d, 2) / d)
    t = np.arange(n)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.outer(t, freqs))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
