# expect: 
import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    ax = axis % output.ndim
    joined = np.concatenate([output, grad_output], axis=ax)
    size = output.shape[ax]
    return np.apply_along_axis(
        lambda v: (np.diag(v[:size]) - np.outer(v[:size], v[:size])) @ v[size:], ax, joined)
