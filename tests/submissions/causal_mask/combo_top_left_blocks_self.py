# expect: causal-mask-blocks-self causal-mask-top-left
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    return np.tril(np.ones((n, m), dtype=bool), k=-1)
