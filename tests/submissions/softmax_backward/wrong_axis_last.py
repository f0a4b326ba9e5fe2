# expect: softmax-backward-wrong-axis
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    y = np.asarray(output)
    dy = np.asarray(grad_output)
    dot = np.sum(dy * y, axis=-1, keepdims=True)
    return y * (dy - dot)
# where: softmax-backward-wrong-axis=8
