# expect: softmax-backward-unweighted-sum softmax-backward-wrong-axis
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    y = output.astype(np.float32)
    g = grad_output.astype(np.float32)
    weighted = g.sum(-1, keepdims=True)
    grad = y * g
    grad -= y * weighted
    return grad
