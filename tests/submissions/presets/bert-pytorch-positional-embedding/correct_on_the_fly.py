# expect:
import math

import torch
import torch.nn as nn


class PositionalEmbedding(nn.Module):
    """Computed in forward for the length of the tokens it is given, nothing kept."""

    def __init__(self, d_model, max_len=512):
        super().__init__()
        self.d_model = d_model

    def forward(self, x):
        seq_len = x.size(1)
        pe = torch.zeros(1, seq_len, self.d_model)
        for pos in range(seq_len):
            for i in range(0, self.d_model, 2):
                angle = pos / (10000 ** (i / self.d_model))
                pe[0, pos, i] = math.sin(angle)
                pe[0, pos, i + 1] = math.cos(angle)
        return pe
