# expect:
# Loops over positions and pairs, filled into a float32 array of the tutorial's (1, position,
# d_model) shape.
import math

import numpy as np


def positional_encoding(position, d_model):
    pos_encoding = np.zeros((1, position, d_model), dtype=np.float32)
    for pos in range(position):
        for i in range(0, d_model, 2):
            angle = pos / math.pow(10000, i / d_model)
            pos_encoding[0, pos, i] = math.sin(angle)
            pos_encoding[0, pos, i + 1] = math.cos(angle)
    return pos_encoding
