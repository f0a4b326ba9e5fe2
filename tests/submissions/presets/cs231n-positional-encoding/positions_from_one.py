# expect: pe-positions-from-one
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, embed_dim, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(1, max_len, embed_dim)
        i = torch.arange(1, max_len + 1).unsqueeze(1)
        pows = torch.pow(10000, -torch.arange(0, embed_dim, 2) / embed_dim)
        pe[0, :, 0::2] = torch.sin(i * pows)
        pe[0, :, 1::2] = torch.cos(i * pows)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.shape[1], :])
