# expect:
import torch


def rope(x, positions=None, theta=10000.0):
    x = torch.as_tensor(x)
    n, d = x.shape[-2:]
    pos = torch.arange(n) if positions is None else torch.as_tensor(positions)
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    freqs = torch.outer(pos.to(torch.float64), inv)
    emb = freqs.repeat_interleave(2, dim=-1)
    rotated = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    return x * emb.cos() + rotated * emb.sin()
