"""Assignment `attention_backward`: write `attention_backward`.

Check your work with `attention-grader check attention_backward.py`.
"""

import numpy as np


def attention_backward(grad_output, Q, K, V, mask=None):
    """The gradients (dQ, dK, dV) of scaled dot-product attention, by hand.

    - The forward is `scaled_dot_product_attention(Q, K, V, mask)`: S = Q K^T /
      sqrt(d_k), P = softmax(S) over the keys (blocked keys weight 0), O = P V.
    - `grad_output` is dL/dO, of shape (..., n, d_v); `Q` (..., n, d_k), `K` (..., m,
      d_k), `V` (..., m, d_v): n != m and d_k != d_v in general, and leading batch/head
      dimensions must work.
    - `mask` is None or a boolean array broadcastable to (..., n, m); True means the
      query may attend to that key. Blocked entries carry no gradient.
    - Return the tuple (dQ, dK, dV), each of the shape of its argument: dV = P^T dO, dP
      = dO V^T, dS = P * (dP - rowsum(P * dP)), dQ = dS K / sqrt(d_k), dK = dS^T Q /
      sqrt(d_k).
    - Do not modify the inputs in place.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("attention_backward is not implemented yet")
