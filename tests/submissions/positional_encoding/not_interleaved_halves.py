# expect: pe-not-interleaved
import numpy as np


def positional_encoding(n_positions, d_model):
    half = d_model // 2
    angles = np.arange(n_positions)[:, None] * np.exp(-np.log(10000.0) * np.arange(half) * 2 / d_model)
    pe = np.empty((n_positions, d_model))
    pe[:, :half] = np.sin(angles)
    pe[:, half:] = np.cos(angles)
    return pe
