# expect:
import numpy as np


def softmax(x, axis=-1):
    if x.ndim > 1:
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        s = np.sum(e, axis=axis, keepdims=True)
        return e / s
    raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
