# expect: pe-exponent-uses-feature
import math


def positional_encoding(n_positions, d_model):
    out = []
    for pos in range(n_positions):
        row = []
        for j in range(d_model):
            angle = pos / 10000 ** (2 * j / d_model)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        out.append(row)
    return out
