"""Assignment `positional_encoding`: write `positional_encoding`.

Check your work with `attention-grader check positional_encoding.py`.
"""

import numpy as np


def positional_encoding(n_positions, d_model):
    """The sinusoidal positional encoding of "Attention Is All You Need".

    - Return an array of shape (n_positions, d_model) for positions 0 .. n_positions -
      1.
    - For the pair i = 0 .. d_model/2 - 1: `PE[p, 2i] = sin(p / 10000**(2i / d_model))`
      and `PE[p, 2i+1] = cos(p / 10000**(2i / d_model))` (sines on the even features,
      cosines on the odd ones, one frequency per pair).
    - d_model is even.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("positional_encoding is not implemented yet")
