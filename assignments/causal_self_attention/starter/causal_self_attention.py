"""Assignment `causal_self_attention`: write `causal_self_attention`.

Check your work with `attention-grader check causal_self_attention.py`.
"""

import numpy as np


def causal_self_attention(X, W_q, W_k, W_v, W_o, num_heads, theta=None):
    """Multi-head causal self-attention of a decoder, with optional RoPE on the queries and keys.

    - `X` has shape (..., n, d_model); `W_q, W_k, W_v, W_o` are (d_model, d_model) and
      multiply on the right (`Q = X @ W_q`).
    - `d_k = d_model // num_heads`; head h uses features [h*d_k:(h+1)*d_k] of the
      projected Q, K, V; each head is scaled dot-product attention with its own
      1/sqrt(d_k).
    - The causal mask is the function's own: position i attends to the positions j <= i
      only (the diagonal included).
    - `theta` None: no position information. A number: RoPE with that theta (pairs (2i,
      2i+1), positions 0 .. n-1) on each head's queries and keys, after the heads are
      split and before the scores; never on the values.
    - Concatenate the heads in order back to (..., n, d_model), then multiply by `W_o`.
      Return (..., n, d_model), or a tuple whose first item is that. Do not modify the
      inputs in place.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("causal_self_attention is not implemented yet")
