# expect: row-sum-misbroadcast
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    y, g = output, grad_output
    s = (y * g).sum(axis=axis)
    return np.einsum("...i,...i->...i", y, g - s)
