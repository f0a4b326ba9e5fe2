# expect: causal-mask-sees-next
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    return np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n) + 1
