# expect: causal-mask-transposed
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    i = np.arange(n)[:, None] + (m - n)
    j = np.arange(m)[None, :]
    return j >= i
