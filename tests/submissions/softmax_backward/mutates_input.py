# expect: mutates-input
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    y = np.asarray(output)
    dy = np.asarray(grad_output)
    dy -= np.sum(dy * y, axis=axis, keepdims=True)
    return y * dy
