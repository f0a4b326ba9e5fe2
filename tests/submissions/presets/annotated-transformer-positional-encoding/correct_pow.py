# expect:
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float64)[:, None]
        rates = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
        pe = torch.stack([torch.sin(position * rates), torch.cos(position * rates)], dim=-1)
        self.register_buffer("pe", pe.reshape(1, max_len, d_model))

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.shape[1]])
