# expect:
import torch


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    # one complex number per (position, pair): exp(i * t * theta^(-2k/dim))
    pair_start = torch.arange(0, dim, 2)[: dim // 2].float()
    inv_freq = theta ** (-pair_start / dim)
    angles = torch.outer(torch.arange(end).float(), inv_freq)
    return torch.polar(torch.ones_like(angles), angles)


def _broadcastable(table: torch.Tensor, z: torch.Tensor):
    # the table is (seq_len, head_dim/2); z is (B, seq_len, n_heads, head_dim/2)
    assert table.shape == (z.shape[1], z.shape[-1])
    return table.view(1, z.shape[1], 1, z.shape[-1])


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    q_pairs = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k_pairs = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    turn = _broadcastable(freqs_cis, q_pairs)
    q_out = torch.view_as_real(q_pairs * turn).flatten(3)
    k_out = torch.view_as_real(k_pairs * turn).flatten(3)
    return q_out.type_as(xq), k_out.type_as(xk)
