# expect: rope-frequency-missing-two
import torch


def precompute_rotary_emb(dim, max_positions):
    # theta_i for i = 1 .. dim/2, with the 2 of 2(i-1)/dim left out
    i = torch.arange(1, dim // 2 + 1).float()
    theta = 1.0 / (10000 ** ((i - 1) / dim))
    angles = torch.arange(max_positions).float()[:, None] * theta
    return torch.stack((angles.cos(), angles.sin()), dim=-1)


def apply_rotary_emb(x, rope_cache):
    T = x.shape[2]
    cos, sin = rope_cache[:T, :, 0], rope_cache[:T, :, 1]
    a, b = x[..., ::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
