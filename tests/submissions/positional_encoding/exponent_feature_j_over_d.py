# expect: pe-exponent-uses-feature
import numpy as np


def positional_encoding(n_positions, d_model):
    j = np.arange(d_model)
    angles = np.arange(n_positions)[:, None] / 10000 ** (j / d_model)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
# where: pe-exponent-uses-feature=7
