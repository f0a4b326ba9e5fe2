# expect: rope-halves-not-interleaved
import torch


def precompute_rotary_emb(dim, max_positions):
    theta = 10000.0 ** (-torch.arange(0, dim, 2).float() / dim)
    angles = torch.arange(max_positions).float()[:, None] * theta
    return torch.stack((angles.cos(), angles.sin()), dim=-1)


def apply_rotary_emb(x, rope_cache):
    T, half = x.shape[2], x.shape[-1] // 2
    cos, sin = rope_cache[:T, :, 0], rope_cache[:T, :, 1]
    x1, x2 = x[..., :half], x[..., half:]  # first half with second half
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
