# expect: row-sum-misbroadcast
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    y = np.asarray(output)
    dy = np.asarray(grad_output)
    dot = np.sum(dy * y, axis=axis)
    return y * (dy - dot)
