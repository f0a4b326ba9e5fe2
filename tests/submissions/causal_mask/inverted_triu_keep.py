# expect: causal-mask-inverted
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    mask = np.triu(np.ones((n, m)), k=m - n + 1)
    return mask
# where: causal-mask-inverted=7
