# expect:
import numpy as np
import torch


def get_sinusoid_encoding_table(n_position, d_hid, padding_idx=None):
    position = np.arange(n_position)[:, None]
    hid = np.arange(d_hid)[None, :]
    sinusoid_table = position / np.power(10000, 2 * (hid // 2) / d_hid)
    sinusoid_table = np.where(hid % 2 == 0, np.sin(sinusoid_table), np.cos(sinusoid_table))
    if padding_idx is not None:
        sinusoid_table[padding_idx, :] = 0.0
    return torch.FloatTensor(sinusoid_table)
