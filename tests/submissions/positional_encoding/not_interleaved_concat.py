# expect: pe-not-interleaved
import numpy as np


def positional_encoding(n_positions, d_model):
    angles = np.arange(n_positions)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)
    return pe
# where: pe-not-interleaved=7
