# expect:
import torch
from torch import nn


def apply_rotary_emb(freqs, t, start_index=0, scale=1.0, seq_dim=-2):
    cos, sin = freqs.cos(), freqs.sin()
    rotated = torch.empty_like(t)
    rotated[..., 0::2] = -t[..., 1::2]
    rotated[..., 1::2] = t[..., 0::2]
    return t * cos + rotated * sin


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, freqs_for="lang", theta=10000):
        super().__init__()
        self.freqs_for = freqs_for
        self.freqs = 1.0 / theta ** (torch.arange(0, dim, 2).float() / dim)

    def forward(self, t, seq_len=None, offset=0):
        assert self.freqs_for == "lang"
        freqs = t.float()[:, None] * self.freqs[None, :]
        return freqs.repeat_interleave(2, dim=-1)
