# expect: softmax-global
import numpy as np


def softmax(x, axis=-1):
    """Normalises over every element at once."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max())
    return e / e.sum()
# where: softmax-global=9
