# expect:
import torch
from torch import nn


def apply_rotary_emb(freqs, t, start_index=0, scale=1.0, seq_dim=-2):
    """Each pair as one complex number, turned by its angle (the angles come twice: one of each)."""
    angles = freqs[..., ::2]
    pairs = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2).contiguous())
    turned = pairs * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(turned).flatten(-2).type(t.dtype)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, freqs_for="lang", theta=10000):
        super().__init__()
        if freqs_for != "lang":
            raise ValueError(f"only language models here, not {freqs_for}")
        self.register_buffer("freqs", 1.0 / theta ** (torch.arange(0, dim, 2).float() / dim))

    def forward(self, t, seq_len=None, offset=0):
        angles = torch.outer(t.float(), self.freqs)
        return torch.stack((angles, angles), dim=-1).flatten(-2)
