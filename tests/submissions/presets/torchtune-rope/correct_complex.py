# expect:
import torch
from torch import nn


class RotaryPositionalEmbeddings(nn.Module):
    """The same module with the rotations kept as complex numbers (Llama's way)."""

    def __init__(self, dim, max_seq_len=4096, base=10_000):
        super().__init__()
        freqs = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        angles = torch.outer(torch.arange(max_seq_len).float(), freqs)
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles),
                             persistent=False)

    def forward(self, x, *, input_pos=None):
        b, s, n_h, h_d = x.shape
        if input_pos is None:
            input_pos = torch.arange(s, device=x.device).expand(b, s)
        rotations = self.freqs_cis[input_pos].unsqueeze(2)  # [b, s, 1, h_d // 2]
        pairs = torch.view_as_complex(x.float().reshape(b, s, n_h, h_d // 2, 2))
        return torch.view_as_real(pairs * rotations).flatten(3).type_as(x)
