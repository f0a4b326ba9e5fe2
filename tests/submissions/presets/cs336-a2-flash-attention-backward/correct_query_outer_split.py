# expect:
# Query tiles outside, key tiles inside (torch.split), base-2 exponentials in the forward, and
# the backward's dK, dV kept per key tile in lists and concatenated at the end.
import math

import torch

LOG2E = 1.4426950408889634
TILE = 16


def _scores(Q_i, K_j, i0, j0, is_causal):
    S = torch.einsum("bqd,bkd->bqk", Q_i, K_j) / math.sqrt(Q_i.shape[-1])
    if is_causal:
        rows = i0 + torch.arange(Q_i.shape[-2])
        cols = j0 + torch.arange(K_j.shape[-2])
        S = S.masked_fill(cols[None, :] > rows[:, None], -1e6)
    return S


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        outputs, lses = [], []
        for qi, Q_i in enumerate(torch.split(Q, TILE, dim=-2)):
            m = torch.full(Q_i.shape[:-1], -torch.inf, dtype=Q.dtype)
            l = torch.zeros(Q_i.shape[:-1], dtype=Q.dtype)
            acc = torch.zeros(*Q_i.shape[:-1], V.shape[-1], dtype=Q.dtype)
            for kj, (K_j, V_j) in enumerate(zip(torch.split(K, TILE, dim=-2),
                                                torch.split(V, TILE, dim=-2))):
                S = _scores(Q_i, K_j, qi * TILE, kj * TILE, is_causal)
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
        ctx.is_causal = is_causal
        return O

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, O, L = ctx.saved_tensors
        scale = 1 / math.sqrt(Q.shape[-1])
        D = torch.einsum("bqd,bqd->bq", dO, O)
        K_tiles, V_tiles = torch.split(K, TILE, dim=-2), torch.split(V, TILE, dim=-2)
        dK_tiles = [torch.zeros_like(K_j) for K_j in K_tiles]
        dV_tiles = [torch.zeros_like(V_j) for V_j in V_tiles]
        dQ_tiles = []
        for qi, (Q_i, dO_i, L_i, D_i) in enumerate(zip(
                torch.split(Q, TILE, dim=-2), torch.split(dO, TILE, dim=-2),
                torch.split(L, TILE, dim=-1), torch.split(D, TILE, dim=-1))):
            dQ_i = torch.zeros_like(Q_i)
            for kj, (K_j, V_j) in enumerate(zip(K_tiles, V_tiles)):
                S = _scores(Q_i, K_j, qi * TILE, kj * TILE, ctx.is_causal)
                P = torch.exp(S - L_i.unsqueeze(-1))
                dV_tiles[kj] = dV_tiles[kj] + torch.einsum("bqk,bqd->bkd", P, dO_i)
                dP = torch.einsum("bqd,bkd->bqk", dO_i, V_j)
                dS = P * (dP - D_i.unsqueeze(-1))
                dQ_i = dQ_i + scale * torch.einsum("bqk,bkd->bqd", dS, K_j)
                dK_tiles[kj] = dK_tiles[kj] + scale * torch.einsum("bqk,bqd->bkd", dS, Q_i)
            dQ_tiles.append(dQ_i)
        return (torch.cat(dQ_tiles, dim=-2), torch.cat(dK_tiles, dim=-2),
                torch.cat(dV_tiles, dim=-2), None)


def get_flashattention_autograd_function_pytorch():
    return FlashAttention
