# expect: causal-mask-transposed
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    mask = np.triu(np.ones((n, m), dtype=bool), k=m - n)
    return mask
# where: causal-mask-transposed=7
