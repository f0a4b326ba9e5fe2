# expect:
# Tiles from torch.split, einsum, a diag(alpha) @ O update and base-2 exponentials.
import math

import torch

LOG2E = 1.4426950408889634


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        tile = 16
        scale = 1 / math.sqrt(Q.shape[-1])
        outputs, lses = [], []
        for qi, Q_i in enumerate(torch.split(Q, tile, dim=-2)):
            m = torch.full(Q_i.shape[:-1], -torch.inf, dtype=Q.dtype)
            l = torch.zeros(Q_i.shape[:-1], dtype=Q.dtype)
            acc = torch.zeros(*Q_i.shape[:-1], V.shape[-1], dtype=Q.dtype)
            for kj, (K_j, V_j) in enumerate(zip(torch.split(K, tile, dim=-2),
                                                torch.split(V, tile, dim=-2))):
                S = torch.einsum("bqd,bkd->bqk", Q_i, K_j) * scale
                if is_causal:
                    rows = qi * tile + torch.arange(Q_i.shape[-2])
                    cols = kj * tile + torch.arange(K_j.shape[-2])
                    S = S.masked_fill(cols[None, :] > rows[:, None], -1e6)
                m_new = torch.maximum(m, S.max(dim=-1).values)
                P = torch.exp2((S - m_new.unsqueeze(-1)) * LOG2E)
                alpha = torch.exp2((m - m_new) * LOG2E)
                l = alpha * l + P.sum(-1)
                acc = torch.diag_embed(alpha) @ acc + torch.einsum("bqk,bkd->bqd", P, V_j)
                m = m_new
            outputs.append(acc / l.unsqueeze(-1))
            lses.append(m + torch.log(l))
        O, L = torch.cat(outputs, dim=-2), torch.cat(lses, dim=-1)
        ctx.save_for_backward(Q, K, V, O, L)
        return O

    @staticmethod
    def backward(ctx, dO):
        raise NotImplementedError


def get_flashattention_autograd_function_pytorch():
    return FlashAttention
