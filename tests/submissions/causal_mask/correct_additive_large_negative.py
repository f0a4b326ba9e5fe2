# expect:
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    keep = np.tril(np.ones((n, m), dtype=np.float32), k=m - n)
    return (1.0 - keep) * -1e9
