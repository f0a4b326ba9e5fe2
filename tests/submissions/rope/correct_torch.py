# expect:
import torch


def rope(x, positions=None, theta=10000.0):
    x = torch.as_tensor(x)
    n, d = x.shape[-2], x.shape[-1]
    pos = torch.arange(n) if positions is None else torch.as_tensor(positions)
    inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = pos[:, None].to(torch.float64) * inv
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack([x1 * ang.cos() - x2 * ang.sin(), x1 * ang.sin() + x2 * ang.cos()], dim=-1)
    return out.flatten(-2)
