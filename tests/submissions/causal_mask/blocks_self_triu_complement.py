# expect: causal-mask-blocks-self
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    mask = 1 - np.triu(np.ones((n, m)), k=m - n)
    return mask
# where: causal-mask-blocks-self=7
