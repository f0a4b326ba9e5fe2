# expect:
import math

import torch


def precompute_freqs_cis(dim, end, theta=10000.0):
    table = torch.zeros(end, dim // 2, dtype=torch.complex64)
    for t in range(end):
        for i in range(dim // 2):
            angle = t / theta ** (2 * i / dim)
            table[t, i] = complex(math.cos(angle), math.sin(angle))
    return table


def apply_rotary_emb(xq, xk, freqs_cis):
    out = []
    for x in (xq, xk):
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
        z = torch.einsum("bshk,sk->bshk", z, freqs_cis)
        out.append(torch.view_as_real(z).reshape(x.shape).to(x.dtype))
    return tuple(out)
