# expect:
import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(1, 200, d_model, dtype=torch.float64)
        for pos in range(200):
            for i in range(0, d_model, 2):
                pe[0, pos, i] = math.sin(pos / 10000 ** (i / d_model))
                pe[0, pos, i + 1] = math.cos(pos / 10000 ** (i / d_model))
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)])
