# expect:
import torch
import torch.nn as nn


class PositionalEmbedding(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float32)[:, None]
        frequencies = 1.0 / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
        angles = position * frequencies
        pe = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).reshape(max_len, d_model)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, token_ids):
        seq_len = token_ids.shape[1]
        return self.pe[:, :seq_len]
