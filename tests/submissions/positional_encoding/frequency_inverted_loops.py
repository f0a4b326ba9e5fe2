# expect: pe-frequency-inverted
import math


def positional_encoding(n_positions, d_model):
    table = []
    for pos in range(n_positions):
        row = []
        for i in range(d_model // 2):
            angle = pos * 10000 ** (2 * i / d_model)
            row += [math.sin(angle), math.cos(angle)]
        table.append(row)
    return table
