# expect: softmax-backward-unweighted-sum
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    y = np.moveaxis(output, axis, -1)
    g = np.moveaxis(grad_output, axis, -1)
    n = y.shape[-1]
    J = y[..., :, None] * (np.eye(n) - 1)
    dx = np.einsum("...ij,...j->...i", J, g)
    return np.moveaxis(dx, -1, axis)
