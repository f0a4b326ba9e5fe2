# expect: softmax-global
import numpy as np


def softmax(x, axis=-1):
    return np.exp(x - x.max()) / np.exp(x - x.max()).sum()
# where: softmax-global=6
