"""Assignment `flash_attention_forward`: write `flash_attention_forward`.

Check your work with `attention-grader check flash_attention_forward.py`.
"""

import numpy as np


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    """The FlashAttention-2 forward: attention computed tile by tile with an online softmax, returning the output O and the logsumexp L.

    - `Q` has shape (..., n, d), `K` (..., m, d), `V` (..., m, d_v); any leading axes
      (batch, heads) are shared by all three. n and m need not be multiples of the block
      sizes.
    - Query tile t holds rows t*block_q .. min((t+1)*block_q, n) - 1 and key tile u keys
      u*block_k .. min((u+1)*block_k, m) - 1; the last, shorter tile of each is
      processed like the others.
    - For each query tile, loop over the key tiles keeping a running row max m, a
      running sum l of exp(S - m) and an unnormalised accumulator, both multiplied by
      exp(m_old - m_new) whenever m grows (S = Q K^T / sqrt(d)); at the end O = acc / l
      and L = m + log l.
    - `causal=True` applies the mask of `causal_mask(n, m)`: the n queries are the last
      n of the m positions, so query i sees key j iff j <= m - n + i.
    - Return the tuple (O, L): O of shape (..., n, d_v), L of shape (..., n) (the
      natural-log logsumexp of each query's visible scaled scores). Do not modify the
      inputs, and never build the whole n x m score matrix.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("flash_attention_forward is not implemented yet")
