# expect: causal-mask-inverted
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    mask = ~np.tril(np.ones((n, m), dtype=bool), k=m - n)
    return mask
# where: causal-mask-inverted=7
