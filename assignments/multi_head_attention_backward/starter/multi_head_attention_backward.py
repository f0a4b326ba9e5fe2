"""Assignment `multi_head_attention_backward`: write `multi_head_attention_backward`.

Check your work with `attention-grader check multi_head_attention_backward.py`.
"""

import numpy as np


def multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """The six gradients of multi-head attention (inputs and weights), by hand.

    - The forward is `multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
      mask)`: Q = X_q W_q, K = X_kv W_k, V = X_kv W_v, split into heads (head h =
      features [h*d_k:(h+1)*d_k], d_k = d_model // num_heads), scaled dot-product
      attention per head with its own 1/sqrt(d_k), heads concatenated in order to C, Y =
      C W_o.
    - `grad_output` is dL/dY, of shape (..., n, d_model); `X_q` (..., n, d_model),
      `X_kv` (..., m, d_model), the weights (d_model, d_model); n != m in general, and
      leading batch dimensions must work.
    - `mask` is None or a boolean array broadcastable to (..., n, m), shared by every
      head; True means the query may attend to that key. Blocked entries carry no
      gradient.
    - Return the tuple (dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o): dX_q the shape of X_q,
      dX_kv of X_kv, each weight gradient (d_model, d_model), summed over every leading
      index and position.
    - dW_o = C^T dY; dC = dY W_o^T, split into heads as Q was; per head the gradients of
      attention; dQ, dK, dV merged back; dW_q = X_q^T dQ, dW_k = X_kv^T dK, dW_v =
      X_kv^T dV; dX_q = dQ W_q^T, dX_kv = dK W_k^T + dV W_v^T.
    - X_q and X_kv are separate inputs even when the same array is passed: return each
      one's own gradient (the caller adds them for self-attention). Do not modify the
      inputs in place.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("multi_head_attention_backward is not implemented yet")
