# expect:
import torch


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = torch.pow(theta, -torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    phase = torch.arange(end, dtype=torch.float32).unsqueeze(1) * freqs
    return torch.complex(torch.cos(phase), torch.sin(phase))


def apply_rotary_emb(xq, xk, freqs_cis):
    cos = freqs_cis.real[None, :, None, :]
    sin = freqs_cis.imag[None, :, None, :]

    def turn(x):
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)

    return turn(xq), turn(xk)
