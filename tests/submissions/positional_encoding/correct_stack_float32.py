# expect:
import numpy as np


def positional_encoding(n_positions, d_model):
    p = np.arange(n_positions, dtype=np.float32)[:, None]
    freq = np.power(np.float32(10000.0), -np.arange(d_model // 2, dtype=np.float32) * 2 / d_model)
    angles = p * freq
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n_positions, d_model)
