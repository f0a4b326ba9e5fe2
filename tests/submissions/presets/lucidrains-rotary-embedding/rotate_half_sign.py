# expect: rope-rotation-reversed
import torch
from torch import nn


def rotate_half(x):
    x = x.reshape(*x.shape[:-1], -1, 2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((x2, -x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_emb(freqs, t, start_index=0, scale=1.0, seq_dim=-2):
    return (t * freqs.cos() * scale) + (rotate_half(t) * freqs.sin() * scale)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, freqs_for="lang", theta=10000):
        super().__init__()
        self.freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))

    def forward(self, t, seq_len=None, offset=0):
        freqs = torch.einsum("..., f -> ... f", t.float(), self.freqs)
        return freqs.repeat_interleave(2, dim=-1)
