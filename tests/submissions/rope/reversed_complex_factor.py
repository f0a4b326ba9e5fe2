# expect: rope-rotation-reversed
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2:]
    positions = np.arange(n) if positions is None else np.asarray(positions)
    freqs = theta ** (-np.arange(0, d, 2) / d)
    ang = np.outer(positions, freqs)
    rot = np.exp(-1j * ang)
    z = x[..., 0::2] + 1j * x[..., 1::2]
    turned = z * rot
    out = np.empty_like(x)
    out[..., 0::2] = turned.real
    out[..., 1::2] = turned.imag
    return out
# where: rope-rotation-reversed=10
