"""Assignment `multi_head_attention`: write `multi_head_attention`.

Check your work with `attention-grader check multi_head_attention.py`.
"""

import numpy as np


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Multi-head attention: project, split into heads, attend per head, merge, project.

    - `X_q` has shape (..., n, d_model), `X_kv` (..., m, d_model); self-attention passes
      the same array twice.
    - `W_q, W_k, W_v, W_o` are (d_model, d_model) and multiply on the right: `Q = X_q @
      W_q`, `K = X_kv @ W_k`, `V = X_kv @ W_v`.
    - `d_k = d_model // num_heads`; head h uses features [h*d_k:(h+1)*d_k] (reshape to
      (..., n, num_heads, d_k), then move the head axis before n).
    - Each head is scaled dot-product attention with its own 1/sqrt(d_k); `mask` (True =
      may attend, broadcastable to (..., n, m)) is shared by every head.
    - Concatenate the heads in order back to (..., n, d_model), then multiply by `W_o`.
    - Return (..., n, d_model), or a tuple whose first item is that. Do not modify the
      inputs in place.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("multi_head_attention is not implemented yet")
