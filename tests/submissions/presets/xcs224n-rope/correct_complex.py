# expect:
import torch


def precompute_rotary_emb(dim, max_positions):
    rope_cache = None
    ### YOUR CODE HERE ###
    i = torch.arange(1, dim // 2 + 1, dtype=torch.float32)
    theta = 10000.0 ** (-2 * (i - 1) / dim)
    t = torch.arange(max_positions, dtype=torch.float32)
    angles = t[:, None] * theta[None, :]
    rope_cache = torch.stack((torch.cos(angles), torch.sin(angles)), dim=-1)
    ### END YOUR CODE ###
    return rope_cache


def apply_rotary_emb(x, rope_cache):
    rotated_x = None
    ### YOUR CODE HERE ###
    T = x.shape[-2]
    cache = torch.view_as_complex(rope_cache[:T].contiguous())  # (T, hs/2)
    x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    rotated_x = torch.view_as_real(x_c * cache).reshape(x.shape).type_as(x)
    ### END YOUR CODE ###
    return rotated_x
