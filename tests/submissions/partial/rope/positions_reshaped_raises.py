# expect:
# After a first edit: given positions are reshaped to (n, 1, 1), so every call with
# positions raises, 2-D or batched; the report tells the shapes, not no-batch-support.
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2:]
    if positions is None:
        positions = np.arange(n)
    else:
        positions = np.asarray(positions).reshape(n, 1, 1)
    angles = np.asarray(positions)[:, None] * theta ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(angles), np.sin(angles)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out
