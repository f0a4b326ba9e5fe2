# expect:
# A CS336 student's RoPE as block-diagonal rotation matrices built once in float32 (torch's
# default) and applied with einsum, which needs x in that dtype; x is (batch, seq_len, d_k).
import torch
import torch.nn as nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta: float, d_k: int, max_seq_len: int, device=None):
        super().__init__()
        k = torch.arange(d_k // 2, device=device)
        inv_freq = theta ** (-2 * k / d_k)
        angles = torch.arange(max_seq_len, device=device)[:, None] * inv_freq[None, :]
        cos, sin = torch.cos(angles), torch.sin(angles)
        rotations = torch.zeros(max_seq_len, d_k, d_k, device=device)
        rotations[:, 2 * k, 2 * k] = cos
        rotations[:, 2 * k, 2 * k + 1] = -sin
        rotations[:, 2 * k + 1, 2 * k] = sin
        rotations[:, 2 * k + 1, 2 * k + 1] = cos
        self.register_buffer("rotations", rotations, persistent=False)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor) -> torch.Tensor:
        r = self.rotations[token_positions]
        return torch.einsum("...ij,...j->...i", r, x)
