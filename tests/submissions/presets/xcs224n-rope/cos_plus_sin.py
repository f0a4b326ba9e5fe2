# expect: rope-no-rotation-partner
import torch


def precompute_rotary_emb(dim, max_positions):
    theta = 10000.0 ** (-torch.arange(0, dim, 2).float() / dim)
    angles = torch.arange(max_positions).float()[:, None] * theta
    return torch.stack((angles.cos(), angles.sin()), dim=-1)


def apply_rotary_emb(x, rope_cache):
    T = x.shape[2]
    cos = rope_cache[:T, :, 0].repeat_interleave(2, dim=-1)
    sin = rope_cache[:T, :, 1].repeat_interleave(2, dim=-1)
    return x * cos + x * sin
