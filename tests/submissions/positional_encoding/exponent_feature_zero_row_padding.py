# expect: pe-exponent-uses-feature
import numpy as np


def positional_encoding(n_positions, d_model):
    position_enc = np.array([
        [pos / np.power(10000, 2 * j / d_model) for j in range(d_model)]
        if pos != 0 else np.zeros(d_model) for pos in range(n_positions)])
    position_enc[1:, 0::2] = np.sin(position_enc[1:, 0::2])
    position_enc[1:, 1::2] = np.cos(position_enc[1:, 1::2])
    return position_enc
# where: pe-exponent-uses-feature=6
