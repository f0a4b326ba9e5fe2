# expect: softmax-wrong-axis
import numpy as np


def softmax(x, axis=-1):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)
# where: softmax-wrong-axis=8
