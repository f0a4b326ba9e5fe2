# expect:
import numpy as np


def softmax(x, axis=-1):
    """Move the axis to the end, work on rows, move it back."""
    moved = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    shifted = moved - moved.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    out = e / e.sum(axis=-1, keepdims=True)
    return np.moveaxis(out, -1, axis)
