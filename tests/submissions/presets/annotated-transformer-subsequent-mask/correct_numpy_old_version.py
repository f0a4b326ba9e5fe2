# expect:
import numpy as np
import torch


def subsequent_mask(size):
    "Mask out subsequent positions (the 2018 version of the notebook)."
    attn_shape = (1, size, size)
    mask = np.triu(np.ones(attn_shape), k=1).astype("uint8")
    return torch.from_numpy(mask) == 0
