# expect:
import math

import numpy as np


def softmax(x, axis=-1):
    moved = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty_like(moved)
    for idx in np.ndindex(*moved.shape[:-1]):
        row = moved[idx]
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = sum(exps)
        out[idx] = [e / total for e in exps]
    return np.moveaxis(out, -1, axis)
