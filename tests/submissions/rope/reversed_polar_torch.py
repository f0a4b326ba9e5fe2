# expect: rope-rotation-reversed
import torch


def rope(x, positions=None, theta=10000.0):
    x = torch.as_tensor(x)
    n, d = x.shape[-2:]
    pos = torch.arange(n) if positions is None else torch.as_tensor(positions)
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.outer(pos.to(torch.float64), inv)
    freqs_cis = torch.polar(torch.ones_like(angles), -angles)
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(pairs * freqs_cis).flatten(-2)
# where: rope-rotation-reversed=11
