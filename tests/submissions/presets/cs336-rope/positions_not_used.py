# expect: rope-positions-ignored
import torch
import torch.nn as nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta, d_k, max_seq_len, device=None):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k))
        freqs = torch.outer(torch.arange(max_seq_len, dtype=torch.float64), inv_freq)
        self.register_buffer("cos", freqs.cos(), persistent=False)
        self.register_buffer("sin", freqs.sin(), persistent=False)

    def forward(self, x, token_positions):
        seq_len = x.shape[-2]
        cos, sin = self.cos[:seq_len], self.sin[:seq_len]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
