# expect: causal-mask-top-left
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    mask = np.tril(np.ones((n, m), dtype=bool))
    return mask
# where: causal-mask-top-left=7
