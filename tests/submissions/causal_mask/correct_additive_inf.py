# expect:
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    future = np.arange(m)[None, :] > np.arange(n)[:, None] + (m - n)
    return np.where(future, -np.inf, 0.0)
