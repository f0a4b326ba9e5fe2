# expect: softmax-global-max
import numpy as np


def softmax(x, axis=-1):
    shifted = x - np.max(x)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)
# where: softmax-global-max=6
