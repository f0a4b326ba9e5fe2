# expect:
# fails: tiling
# The backward many CS336 students write first: the whole of P recomputed at once from L with
# einsum (torch.compile'd in the handout's suggestion), no tiles in the backward.
import math

import torch


def _forward_tiles(Q, K, V, is_causal, tile=16):
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
            P = torch.exp(S - m_new.unsqueeze(-1))
            alpha = torch.exp(m - m_new)
            l = alpha * l + P.sum(-1)
            acc = alpha.unsqueeze(-1) * acc + torch.einsum("bqk,bkd->bqd", P, V_j)
            m = m_new
        outputs.append(acc / l.unsqueeze(-1))
        lses.append(m + torch.log(l))
    return torch.cat(outputs, dim=-2), torch.cat(lses, dim=-1)


def _backward(Q, K, V, O, L, dO, is_causal):
    scale = 1 / math.sqrt(Q.shape[-1])
    S = torch.einsum("bqd,bkd->bqk", Q, K) * scale
    if is_causal:
        n_q, n_k = S.shape[-2:]
        S = S.masked_fill(torch.ones(n_q, n_k, dtype=torch.bool).triu(1), -1e6)
    P = torch.exp(S - L.unsqueeze(-1))
    dV = torch.einsum("bqk,bqd->bkd", P, dO)
    dP = torch.einsum("bqd,bkd->bqk", dO, V)
    D = torch.sum(O * dO, dim=-1, keepdim=True)
    dS = P * (dP - D)
    dQ = torch.einsum("bqk,bkd->bqd", dS, K) * scale
    dK = torch.einsum("bqk,bqd->bkd", dS, Q) * scale
    return dQ, dK, dV


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        O, L = _forward_tiles(Q, K, V, is_causal)
        ctx.save_for_backward(Q, K, V, O, L)
        ctx.is_causal = is_causal
        return O

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, O, L = ctx.saved_tensors
        dQ, dK, dV = _backward(Q, K, V, O, L, dO, ctx.is_causal)
        return dQ, dK, dV, None


def get_flashattention_autograd_function_pytorch():
    return FlashAttention
