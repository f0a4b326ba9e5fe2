# expect: lse-missing-max
# L = log(l): the running max is not added back.
import math

import torch


class FlashAttentionPytorch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        B_q, B_k = 16, 16
        batch, N_q, d = Q.shape
        N_k = K.shape[1]
        scale = 1 / math.sqrt(d)
        O = torch.empty_like(Q)
        L = torch.empty(batch, N_q, device=Q.device, dtype=Q.dtype)
        for i in range(0, N_q, B_q):
            Q_i = Q[:, i:i + B_q]
            rows = Q_i.shape[1]
            O_i = torch.zeros(batch, rows, V.shape[-1], device=Q.device, dtype=Q.dtype)
            l_i = torch.zeros(batch, rows, device=Q.device, dtype=Q.dtype)
            m_i = torch.full((batch, rows), float("-inf"), device=Q.device, dtype=Q.dtype)
            for j in range(0, N_k, B_k):
                K_j, V_j = K[:, j:j + B_k], V[:, j:j + B_k]
                S_ij = Q_i @ K_j.transpose(-1, -2) * scale
                if is_causal:
                    q_idx = torch.arange(i, i + rows, device=Q.device)[:, None]
                    k_idx = torch.arange(j, j + K_j.shape[1], device=Q.device)[None, :]
                    S_ij = S_ij + torch.where(q_idx >= k_idx, 0.0, -1e6)
                m_new = torch.maximum(m_i, S_ij.amax(dim=-1))
                P_ij = torch.exp(S_ij - m_new[..., None])
                alpha = torch.exp(m_i - m_new)
                l_i = alpha * l_i + P_ij.sum(dim=-1)
                O_i = alpha[..., None] * O_i + P_ij @ V_j
                m_i = m_new
            O[:, i:i + rows] = O_i / l_i[..., None]
            L[:, i:i + rows] = torch.log(l_i)
        ctx.save_for_backward(L, Q, K, V, O)
        ctx.is_causal = is_causal
        return O

    @staticmethod
    def backward(ctx, grad_out):
        raise NotImplementedError


def get_flashattention_autograd_function_pytorch():
    return FlashAttentionPytorch
# where: lse-missing-max=37
