# expect:
import numpy as np


def positional_encoding(n_positions, d_model):
    position = np.arange(n_positions)[:, None]
    rates = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(position * rates)
    pe[:, 1::2] = np.cos(position * rates)
    return pe
