# expect: causal-mask-blocks-self
import numpy as np


def causal_mask(n, m=None):
    m = n if m is None else m
    query_pos = np.arange(m - n, m)
    key_pos = np.arange(1, m + 1)
    return key_pos[None, :] <= query_pos[:, None]
# where: causal-mask-blocks-self=8
