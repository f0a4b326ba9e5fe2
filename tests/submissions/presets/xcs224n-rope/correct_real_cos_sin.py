# expect:
import torch


def precompute_rotary_emb(dim, max_positions):
    freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    pos = torch.arange(max_positions).float()
    ang = torch.einsum("t,i->ti", pos, freqs)
    return torch.stack([ang.cos(), ang.sin()], dim=-1)


def apply_rotary_emb(x, rope_cache):
    seq_len = x.size(2)
    cos = rope_cache[:seq_len, :, 0]
    sin = rope_cache[:seq_len, :, 1]
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out
