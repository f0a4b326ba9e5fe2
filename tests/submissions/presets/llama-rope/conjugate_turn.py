# expect: rope-rotation-reversed
import torch


def precompute_freqs_cis(dim, end, theta=10000.0):
    step = theta ** (-torch.arange(0, dim, 2).float() / dim)
    angles = torch.arange(end, dtype=torch.float32)[:, None] * step
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    # "undo" the phase: conjugating the table turns the other way
    freqs_cis = freqs_cis.conj().view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)
