# expect: softmax-wrong-axis
import numpy as np


def softmax(x, axis=-1):
    x = x - np.max(x, axis=0, keepdims=True)
    x = np.exp(x)
    x = x / np.sum(x, axis=0, keepdims=True)
    return x
# where: softmax-wrong-axis=8
