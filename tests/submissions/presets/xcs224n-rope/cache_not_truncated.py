# expect:
# error: runtime-error
# (the whole cache of max_positions rows meets a sequence of T < max_positions tokens: the
# handout's note to cut it to the sequence length was missed, and the shapes do not broadcast)
import torch


def precompute_rotary_emb(dim, max_positions):
    theta = 10000.0 ** (-torch.arange(0, dim, 2).float() / dim)
    angles = torch.arange(max_positions).float()[:, None] * theta
    return torch.stack((angles.cos(), angles.sin()), dim=-1)


def apply_rotary_emb(x, rope_cache):
    cache = torch.view_as_complex(rope_cache.contiguous())
    x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_c * cache).flatten(-2)
