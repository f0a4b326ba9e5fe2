# expect:
import numpy as np


def softmax(x, axis=-1):
    batch, n = x.shape[0], x.shape[1]  # (at least two axes)
    assert batch >= 1 and n >= 1
    moved = np.moveaxis(x, axis, -1)
    e = np.exp(moved - moved.max(axis=-1, keepdims=True))
    return np.moveaxis(e / e.sum(axis=-1, keepdims=True), -1, axis)
