# expect: pe-sin-cos-swapped
import math


def positional_encoding(n_positions, d_model):
    return [[math.cos(p / 10000 ** (2 * (j // 2) / d_model)) if j % 2 == 0
             else math.sin(p / 10000 ** (2 * (j // 2) / d_model))
             for j in range(d_model)] for p in range(n_positions)]
