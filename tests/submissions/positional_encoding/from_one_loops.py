# expect: pe-positions-from-one
import math


def positional_encoding(n_positions, d_model):
    table = []
    for pos in range(1, n_positions + 1):
        table.append([math.sin(pos / 10000 ** (2 * (j // 2) / d_model)) if j % 2 == 0
                      else math.cos(pos / 10000 ** (2 * (j // 2) / d_model))
                      for j in range(d_model)])
    return table
