# expect: no-batch-support
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    y, g = np.atleast_2d(output), np.atleast_2d(grad_output)
    if axis in (0, -2) and y.ndim == 2:
        y, g = y.T, g.T
    out = np.zeros_like(y)
    for i in range(y.shape[0]):
        out[i] = y[i] * (g[i] - y[i] @ g[i])
    if axis in (0, -2) and y.ndim == 2:
        out = out.T
    return out.reshape(np.shape(output))
