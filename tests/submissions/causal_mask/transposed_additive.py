# expect: causal-mask-transposed
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    past = np.tril(np.ones((n, m)), k=m - n - 1)
    return past * -1e9
