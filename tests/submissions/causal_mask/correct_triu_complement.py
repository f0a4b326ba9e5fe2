# expect:
import numpy as np


def causal_mask(n, m=None):
    m = m or n
    blocked = np.triu(np.ones((n, m)), k=m - n + 1).astype(bool)
    return ~blocked
