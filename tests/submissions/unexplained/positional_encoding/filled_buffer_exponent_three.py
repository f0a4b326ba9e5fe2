# located: output
import numpy as np


def positional_encoding(n_positions, d_model):
    pe = np.zeros((n_positions, d_model))
    for pos in range(n_positions):
        for i in range(0, d_model, 2):
            pe[pos, i] = np.sin(pos / (10000 ** ((3 * i) / d_model)))
            pe[pos, i + 1] = np.cos(pos / (10000 ** ((3 * i) / d_model)))
    return pe
