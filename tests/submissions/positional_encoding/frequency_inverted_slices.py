# expect: pe-frequency-inverted
import numpy as np


def positional_encoding(n_positions, d_model):
    position = np.arange(n_positions)[:, None]
    angles = position * 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
# where: pe-frequency-inverted=7
