# expect:
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    query_pos = np.arange(n)[:, None]
    key_pos = np.arange(m)[None, :] - (m - n)
    return ~(key_pos > query_pos)
