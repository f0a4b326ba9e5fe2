# expect: mutates-input
import numpy as np


def softmax(x, axis=-1):
    x -= np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
# where: mutates-input=6
