"""Assignment `softmax_backward`: write `softmax_backward`.

Check your work with `attention-grader check softmax_backward.py`.
"""

import numpy as np


def softmax_backward(grad_output, output, axis=-1):
    """The gradient of a softmax along any axis, from its output.

    - `output` is Y = softmax(x) along `axis` (its slices along `axis` are probability
      distributions); x itself is not given.
    - `grad_output` is dL/dY, of the shape of Y; return dL/dx, of the same shape: the
      vector-Jacobian product with J = diag(y) - y y^T for each slice.
    - Any number of dimensions, 1-D included; `axis` is any valid axis, negative ones
      counted from the end.
    - Do not modify the inputs in place.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("softmax_backward is not implemented yet")
