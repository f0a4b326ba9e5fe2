# expect: rope-halves-not-interleaved
import torch


def precompute_freqs_cis(dim, end, theta=10000.0):
    inv_freq = theta ** (-torch.arange(0, dim, 2).float() / dim)
    angles = torch.arange(end).float()[:, None] * inv_freq[None, :]
    return torch.exp(1j * angles)


def _rotate(x, freqs_cis):
    half = x.shape[-1] // 2
    # the first half as the real parts, the second as the imaginary ones
    z = torch.complex(x[..., :half].float(), x[..., half:].float())
    z = z * freqs_cis[None, :, None, :]
    return torch.cat((z.real, z.imag), dim=-1).type_as(x)


def apply_rotary_emb(xq, xk, freqs_cis):
    return _rotate(xq, freqs_cis), _rotate(xk, freqs_cis)
