# expect: pe-exponent-uses-feature
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, embed_dim, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(1, max_len, embed_dim, dtype=torch.float64)
        i = torch.arange(max_len, dtype=torch.float64)
        for j in range(embed_dim):
            if j % 2 == 0:
                pe[0, :, j] = torch.sin(i * 10000 ** (-j / embed_dim))
            else:
                pe[0, :, j] = torch.cos(i * 10000 ** (-j / embed_dim))
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.shape[1], :])
