"""Assignment `causal_mask`: write `causal_mask`.

Check your work with `attention-grader check causal_mask.py`.
"""

import numpy as np


def causal_mask(n, m=None):
    """The causal (look-ahead) mask: each query may attend to the keys at or before its position.

    - Return an (n, m) mask (m defaults to n) in the attention convention: True (or 1)
      where the query may attend to the key.
    - The n queries are the last n of the m positions (a KV cache holds the m - n
      earlier tokens): query i sits at position m - n + i and may attend to every key j
      <= m - n + i.
    - With m = n this is the lower triangle, diagonal included: every token sees itself
      and the tokens before it.
    - Boolean, 0/1 integer or 0./1. float masks are accepted; so is an additive float
      mask (0 where allowed, -inf or a number <= -1e4 where blocked).
    """
    # Your code here: replace the line below.
    raise NotImplementedError("causal_mask is not implemented yet")
