"""Assignment `rope`: write `rope`.

Check your work with `attention-grader check rope.py`.
"""

import numpy as np


def rope(x, positions=None, theta=10000.0):
    """Rotary position embedding (RoPE): each pair of features turned by an angle that grows with the position.

    - `x` has shape (..., n, d) with d even; `positions` is None (meaning 0 .. n-1) or
      an integer array of shape (n,), shared by every leading index.
    - For the pair i = 0 .. d/2 - 1 of features (2i, 2i+1) and the angle `a =
      positions[t] * theta**(-2i / d)`: `out[..., t, 2i] = x[..., t, 2i] cos a - x[...,
      t, 2i+1] sin a` and `out[..., t, 2i+1] = x[..., t, 2i] sin a + x[..., t, 2i+1] cos
      a`.
    - Neighbouring features form a pair (the 'rotate half' layout, pairs (i, i + d/2),
      is a different convention).
    - Return an array of `x`'s shape. Do not modify `x` in place.
    """
    # Your code here: replace the line below.
    raise NotImplementedError("rope is not implemented yet")
