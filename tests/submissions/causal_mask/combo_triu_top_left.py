# expect: causal-mask-top-left causal-mask-transposed
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    return np.triu(np.ones((n, m), dtype=bool))
