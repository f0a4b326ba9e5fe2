# expect: causal-mask-sees-next
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    mask = np.tril(np.ones((n, m), dtype=bool), k=m - n + 1)
    return mask
# where: causal-mask-sees-next=7
