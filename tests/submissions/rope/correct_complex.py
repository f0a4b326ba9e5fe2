# expect:
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2:]
    if positions is None:
        positions = np.arange(n)
    freqs = 1.0 / theta ** (np.arange(0, d, 2)[: d // 2] / d)
    phases = np.exp(1j * np.outer(positions, freqs))
    z = x[..., 0::2] + 1j * x[..., 1::2]
    turned = z * phases
    return np.stack([turned.real, turned.imag], axis=-1).reshape(x.shape)
