# expect: causal-mask-sees-next
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    blocked = np.triu(np.ones((n, m), dtype=bool), k=m - n + 2)
    return np.where(blocked, float("-inf"), 0.0)
# where: causal-mask-sees-next=7
