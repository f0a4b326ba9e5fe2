# expect:
import numpy as np


def softmax(x, axis=-1):
    assert x.ndim >= 2, "softmax expects a batch of rows"
    shifted = x - x.max(axis=axis, keepdims=True)
    log_z = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return np.exp(shifted - log_z)
