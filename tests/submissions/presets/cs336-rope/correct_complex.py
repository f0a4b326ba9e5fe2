# expect:
import torch
import torch.nn as nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta, d_k, max_seq_len, device=None):
        super().__init__()
        freqs = theta ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
        angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float64), freqs)
        self.register_buffer("turn", torch.polar(torch.ones_like(angles), angles), persistent=False)

    def forward(self, x, token_positions):
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
        return torch.view_as_real(z * self.turn[token_positions]).flatten(-2)
