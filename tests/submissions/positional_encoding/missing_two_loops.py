# expect: pe-exponent-missing-two
import math


def positional_encoding(n_positions, d_model):
    pe = [[0.0] * d_model for _ in range(n_positions)]
    for p in range(n_positions):
        for i in range(d_model // 2):
            a = p / 10000 ** (i / d_model)
            pe[p][2 * i], pe[p][2 * i + 1] = math.sin(a), math.cos(a)
    return pe
