"""Assignment `flash_attention_backward`: write `flash_attention_backward`.

Check your work with `attention-grader check flash_attention_backward.py`.
"""

import numpy as np


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    """The FlashAttention-2 backward: the gradients (dQ, dK, dV) tile by tile, recomputing the weights from the logsumexp L.

    - `grad_output` (dO) has shape (..., n, d_v), `Q` (..., n, d), `K` (..., m, d), `V`
      (..., m, d_v); `O` (..., n, d_v) and `L` (..., n) are the correct forward outputs
      for them. Any leading axes are shared by all.
    - Query tile t holds rows t*block_q .. min((t+1)*block_q, n) - 1 and key tile u keys
      u*block_k .. min((u+1)*block_k, m) - 1; the last, shorter tile of each is
      processed like the others.
    - Per (query tile, key tile): recompute P = exp(S - L) with S = Q K^T / sqrt(d)
      (masked entries 0), then dV += P^T dO, dP = dO V^T, dS = P * (dP - D) with D =
      rowsum(dO * O), dQ += dS K / sqrt(d), dK += dS^T Q / sqrt(d).
    - `causal=True` applies the mask of `causal_mask(n, m)`: query i sees key j iff j <=
      m - n + i.
    - Return the tuple (dQ, dK, dV), each of the shape of its argument. Do not modify
      the inputs, and never build the whole n x m score matrix.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("flash_attention_backward is not implemented yet")
