"""Assignment `attention`: write `scaled_dot_product_attention`.

Check your work with `attention-grader check attention.py`.
"""

import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Scaled dot-product attention with an optional boolean mask (True = may attend).

    - `Q` has shape (..., n, d_k), `K` (..., m, d_k), `V` (..., m, d_v): n != m and d_k
      != d_v in general, and leading batch/head dimensions must work.
    - Scores are Q K^T / sqrt(d_k); the softmax runs over the keys (the last axis).
    - `mask` is None or a boolean array broadcastable to (..., n, m); True means the
      query may attend to that key. Masked keys get zero weight.
    - Return the output (..., n, d_v), or a tuple (output, weights) with the weights
      (..., n, m).
    - Do not modify the inputs in place.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("scaled_dot_product_attention is not implemented yet")
