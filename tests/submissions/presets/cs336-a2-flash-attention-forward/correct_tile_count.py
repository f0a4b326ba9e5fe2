# expect:
# The tile counts T_q = ceil(N_q / B_q) and T_k from Algorithm 1, indices clamped at the end.
import math

import torch


class FlashAttn2(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        Bq = Bk = 16
        b, Nq, d = Q.shape
        Nk = K.shape[-2]
        Tq, Tk = math.ceil(Nq / Bq), math.ceil(Nk / Bk)
        O = torch.zeros(b, Nq, V.shape[-1], dtype=Q.dtype)
        L = torch.zeros(b, Nq, dtype=Q.dtype)
        for i in range(Tq):
            q0, q1 = i * Bq, min((i + 1) * Bq, Nq)
            Qi = Q[:, q0:q1, :]
            Oi = torch.zeros(b, q1 - q0, V.shape[-1], dtype=Q.dtype)
            li = torch.zeros(b, q1 - q0, dtype=Q.dtype)
            mi = torch.full((b, q1 - q0), -float("inf"), dtype=Q.dtype)
            for j in range(Tk):
                k0, k1 = j * Bk, min((j + 1) * Bk, Nk)
                Sij = torch.matmul(Qi, K[:, k0:k1, :].transpose(1, 2)) / math.sqrt(d)
                if is_causal:
                    mask = torch.arange(q0, q1)[:, None] < torch.arange(k0, k1)[None, :]
                    Sij = Sij + mask * -1e6
                mij = torch.max(mi, Sij.max(dim=-1)[0])
                Pij = torch.exp(Sij - mij.unsqueeze(-1))
                li = torch.exp(mi - mij) * li + Pij.sum(dim=-1)
                Oi = torch.exp(mi - mij).unsqueeze(-1) * Oi + torch.matmul(Pij, V[:, k0:k1, :])
                mi = mij
            O[:, q0:q1, :] = Oi / li.unsqueeze(-1)
            L[:, q0:q1] = mi + torch.log(li)
        ctx.save_for_backward(Q, K, V, O, L)
        ctx.is_causal = is_causal
        return O

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError


def get_flashattention_autograd_function_pytorch():
    return FlashAttn2
