# expect:
import torch


def precompute_rotary_emb(dim, max_positions):
    # kept as complex numbers (max_positions, dim/2) rather than the (..., 2) of the handout:
    # the two functions agree with each other, and that is all the model sees
    inv = 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))
    phases = torch.outer(torch.arange(max_positions).float(), inv)
    return torch.polar(torch.ones_like(phases), phases)


def apply_rotary_emb(x, rope_cache):
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    turned = pairs * rope_cache[: pairs.shape[2]].unsqueeze(0).unsqueeze(1)
    return torch.view_as_real(turned).reshape(*x.shape)
