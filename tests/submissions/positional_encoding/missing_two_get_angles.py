# expect: pe-exponent-missing-two
import numpy as np


def positional_encoding(n_positions, d_model):
    i = np.arange(d_model) // 2
    angles = np.arange(n_positions)[:, None] / np.power(10000, i / d_model)
    angles[:, 0::2] = np.sin(angles[:, 0::2])
    angles[:, 1::2] = np.cos(angles[:, 1::2])
    return angles
# where: pe-exponent-missing-two=7
