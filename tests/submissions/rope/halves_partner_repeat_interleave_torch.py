# expect: rope-halves-not-interleaved
import torch


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, positions=None, theta=10000.0):
    x = torch.as_tensor(x)
    n, d = x.shape[-2:]
    pos = torch.arange(n) if positions is None else torch.as_tensor(positions)
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    freqs = torch.outer(pos.to(torch.float64), inv)
    emb = freqs.repeat_interleave(2, dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()
# where: rope-halves-not-interleaved=17
