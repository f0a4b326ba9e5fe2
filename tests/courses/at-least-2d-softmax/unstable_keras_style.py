# expect: unstable-softmax
import numpy as np


def softmax(x, axis=-1):
    if x.ndim > 1:
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)
    raise ValueError("Cannot apply softmax to a tensor that is 1D")
