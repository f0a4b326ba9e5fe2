# expect:
import math

import torch
from torch import nn


class RotaryPositionalEmbeddings(nn.Module):
    """Written out: each sample's positions, each pair of features turned by its own angle."""

    def __init__(self, dim, max_seq_len=4096, base=10_000):
        super().__init__()
        self.dim = dim
        self.base = base
        self.max_seq_len = max_seq_len

    def forward(self, x, *, input_pos=None):
        b, s, n_h, h_d = x.shape
        out = torch.empty_like(x)
        for sample in range(b):
            for t in range(s):
                pos = t if input_pos is None else int(input_pos[sample, t])
                for i in range(h_d // 2):
                    angle = pos / (self.base ** (2 * i / self.dim))
                    c, si = math.cos(angle), math.sin(angle)
                    x0 = x[sample, t, :, 2 * i]
                    x1 = x[sample, t, :, 2 * i + 1]
                    out[sample, t, :, 2 * i] = x0 * c - x1 * si
                    out[sample, t, :, 2 * i + 1] = x1 * c + x0 * si
        return out
