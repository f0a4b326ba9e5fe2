# expect: unstable-softmax
import numpy as np


def softmax(x, axis=-1):
    shifted = x
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)
# where: unstable-softmax=7
