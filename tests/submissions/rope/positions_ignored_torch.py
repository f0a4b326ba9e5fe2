# expect: rope-positions-ignored
import torch


def rope(x, positions=None, theta=10000.0):
    x = torch.as_tensor(x)
    n, d = x.shape[-2], x.shape[-1]
    ang = torch.arange(n, dtype=torch.float64)[:, None] * theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * ang.cos() - x2 * ang.sin(), x1 * ang.sin() + x2 * ang.cos()], dim=-1).flatten(-2)
