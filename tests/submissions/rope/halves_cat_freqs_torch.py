# expect: rope-halves-not-interleaved
import torch


def rope(x, positions=None, theta=10000.0):
    x = torch.as_tensor(x)
    n, d = x.shape[-2:]
    pos = torch.arange(n) if positions is None else torch.as_tensor(positions)
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    freqs = torch.outer(pos.to(torch.float64), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * emb.cos() + rotated * emb.sin()
# where: rope-halves-not-interleaved=14
