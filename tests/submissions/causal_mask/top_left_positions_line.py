# expect: causal-mask-top-left
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    query_pos = np.arange(n)
    key_pos = np.arange(m)
    allowed = key_pos[None, :] <= query_pos[:, None]
    return allowed
# where: causal-mask-top-left=7
