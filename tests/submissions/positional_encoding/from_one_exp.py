# expect: pe-positions-from-one
import numpy as np


def positional_encoding(n_positions, d_model):
    pos = np.arange(n_positions)[:, None] + 1
    div = np.exp(-np.log(10000.0) * np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos * div), np.cos(pos * div)
    return pe
