# expect: pe-not-interleaved pe-sin-cos-swapped
import numpy as np


def positional_encoding(n_positions, d_model):
    angles = np.arange(n_positions)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    return np.hstack([np.cos(angles), np.sin(angles)])
