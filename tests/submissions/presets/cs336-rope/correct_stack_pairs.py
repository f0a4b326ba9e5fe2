# expect:
import torch
import torch.nn as nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta, d_k, max_seq_len, device=None):
        super().__init__()
        self.theta, self.d_k = theta, d_k

    def forward(self, x, token_positions):
        k = torch.arange(self.d_k // 2, dtype=torch.float64)
        angle = token_positions[..., None].to(torch.float64) / self.theta ** (2 * k / self.d_k)
        c, s = angle.cos(), angle.sin()
        even, odd = x[..., ::2], x[..., 1::2]
        return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2)
