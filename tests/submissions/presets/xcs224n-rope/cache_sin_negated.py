# expect: rope-rotation-reversed
import torch


def precompute_rotary_emb(dim, max_positions):
    theta = 10000.0 ** (-torch.arange(0, dim, 2).float() / dim)
    angles = torch.arange(max_positions).float().unsqueeze(1) * theta
    return torch.stack((torch.cos(angles), -torch.sin(angles)), dim=-1)


def apply_rotary_emb(x, rope_cache):
    cache = torch.view_as_complex(rope_cache[: x.shape[-2]].contiguous())
    x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_c * cache).flatten(-2)
