# expect:
import torch
import torch.nn as nn


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config.head_dim
        self.register_buffer(
            "inv_freq", torch.pow(config.rope_theta, -torch.arange(0, d, 2).float() / d),
            persistent=False)

    def forward(self, x, position_ids):
        angles = position_ids.float().unsqueeze(-1) * self.inv_freq  # (B, T, d/2)
        angles = angles.repeat(1, 1, 2)  # the same angle for i and i + d/2
        return torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)

    def turn(t):
        first, second = t.chunk(2, dim=-1)
        return torch.cat((first, second), -1) * cos + torch.cat((-second, first), -1) * sin

    return turn(q), turn(k)
