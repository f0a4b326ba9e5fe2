# expect:
import math

import torch
from torch import nn


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.theta = config.rope_theta
        self.dim = config.hidden_size // config.num_attention_heads

    def forward(self, x, position_ids):
        half = self.dim // 2
        k = torch.arange(half, dtype=torch.float32)
        inv_freq = torch.exp(-math.log(self.theta) * 2 * k / self.dim)
        freqs = position_ids[..., None].to(torch.float32) * inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos(), emb.sin()


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    c = cos.unsqueeze(unsqueeze_dim)[..., : q.shape[-1] // 2]
    s = sin.unsqueeze(unsqueeze_dim)[..., : q.shape[-1] // 2]
    out = []
    for t in (q, k):
        h = t.shape[-1] // 2
        a, b = t[..., :h], t[..., h:]
        out.append(torch.cat([a * c - b * s, b * c + a * s], dim=-1))
    return out[0], out[1]
