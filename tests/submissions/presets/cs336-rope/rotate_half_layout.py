# expect: rope-halves-not-interleaved
import torch
import torch.nn as nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta, d_k, max_seq_len, device=None):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k))
        freqs = torch.outer(torch.arange(max_seq_len, dtype=torch.float64), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x, token_positions):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        rotated = torch.cat((-x2, x1), dim=-1)
        return x * self.cos[token_positions] + rotated * self.sin[token_positions]
