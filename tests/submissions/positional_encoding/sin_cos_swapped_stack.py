# expect: pe-sin-cos-swapped
import numpy as np


def positional_encoding(n_positions, d_model):
    angles = np.arange(n_positions)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    return pe.reshape(n_positions, d_model)
# where: pe-sin-cos-swapped=7
