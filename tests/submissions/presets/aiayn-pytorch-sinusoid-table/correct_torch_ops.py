# expect:
import math

import torch


def get_sinusoid_encoding_table(n_position, d_hid, padding_idx=None):
    position = torch.arange(n_position, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_hid, 2).float() * -(math.log(10000.0) / d_hid))
    table = torch.zeros(n_position, d_hid)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    if padding_idx is not None:
        table[padding_idx] = 0.0
    return table
