# expect: online-rescale-inverted
# The accumulator rescaled by exp(m_new - m_old), the inverse of the factor.
import math

import torch


class FlashAttentionPytorch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        B_q, B_k = 16, 16
        batch, N_q, d = Q.shape
        N_k = K.shape[1]
        O = torch.empty_like(Q)
        L = torch.empty(batch, N_q, dtype=Q.dtype)
        for i in range(0, N_q, B_q):
            Q_i = Q[:, i:i + B_q]
            rows = Q_i.shape[1]
            O_i = torch.zeros(batch, rows, V.shape[-1], dtype=Q.dtype)
            l_i = torch.zeros(batch, rows, dtype=Q.dtype)
            m_i = torch.full((batch, rows), float("-inf"), dtype=Q.dtype)
            for j in range(0, N_k, B_k):
                K_j, V_j = K[:, j:j + B_k], V[:, j:j + B_k]
                S_ij = Q_i @ K_j.transpose(-1, -2) / math.sqrt(d)
                if is_causal:
                    q_idx = torch.arange(i, i + rows)[:, None]
                    k_idx = torch.arange(j, j + K_j.shape[1])[None, :]
                    S_ij = S_ij.masked_fill(k_idx > q_idx, -1e6)
                m_new = torch.maximum(m_i, S_ij.amax(dim=-1))
                P_ij = torch.exp(S_ij - m_new[..., None])
                l_i = torch.exp(m_i - m_new) * l_i + P_ij.sum(dim=-1)
                O_i = torch.exp(m_new - m_i).nan_to_num(0.0)[..., None] * O_i + P_ij @ V_j
                m_i = m_new
            O[:, i:i + rows] = O_i / l_i[..., None]
            L[:, i:i + rows] = m_i + torch.log(l_i)
        ctx.save_for_backward(L, Q, K, V, O)
        return O

    @staticmethod
    def backward(ctx, grad_out):
        raise NotImplementedError


def get_flashattention_autograd_function_pytorch():
    return FlashAttentionPytorch
# where: online-rescale-inverted=32
