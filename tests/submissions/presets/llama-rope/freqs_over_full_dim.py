# expect: rope-frequency-missing-two
import torch


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    # every index of the head, then the first half of them: the step of 2 is lost
    inv = 1.0 / (theta ** (torch.arange(0, dim)[: dim // 2].float() / dim))
    positions = torch.arange(end).float()
    phases = torch.outer(positions, inv)
    return torch.polar(torch.ones_like(phases), phases)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    rows = freqs_cis[None, :, None, :]
    return (torch.view_as_real(xq_ * rows).flatten(3).type_as(xq),
            torch.view_as_real(xk_ * rows).flatten(3).type_as(xk))
