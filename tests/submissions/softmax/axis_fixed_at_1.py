# expect: softmax-wrong-axis
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)
