# expect: causal-mask-missing
# The forward masks the future keys; the backward recomputes P from L without the mask.
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
            O_i = torch.zeros(batch, rows, d, dtype=Q.dtype)
            l_i = torch.zeros(batch, rows, dtype=Q.dtype)
            m_i = torch.full((batch, rows), float("-inf"), dtype=Q.dtype)
            for j in range(0, N_k, B_k):
                K_j, V_j = K[:, j:j + B_k], V[:, j:j + B_k]
                S_ij = Q_i @ K_j.transpose(-1, -2) / math.sqrt(d)
                if is_causal:
                    q_idx = torch.arange(i, i + rows)[:, None]
                    k_idx = torch.arange(j, j + K_j.shape[1])[None, :]
                    S_ij = S_ij + torch.where(q_idx >= k_idx, 0.0, -1e6)
                m_new = torch.maximum(m_i, S_ij.amax(dim=-1))
                P_ij = torch.exp(S_ij - m_new[..., None])
                alpha = torch.exp(m_i - m_new)
                l_i = alpha * l_i + P_ij.sum(dim=-1)
                O_i = alpha[..., None] * O_i + P_ij @ V_j
                m_i = m_new
            O[:, i:i + rows] = O_i / l_i[..., None]
            L[:, i:i + rows] = m_i + torch.log(l_i)
        ctx.save_for_backward(L, Q, K, V, O)
        ctx.is_causal = is_causal
        return O

    @staticmethod
    def backward(ctx, dO):
        L, Q, K, V, O = ctx.saved_tensors
        B_q, B_k = 16, 16
        d = Q.shape[-1]
        N_q, N_k = Q.shape[1], K.shape[1]
        D = (dO * O).sum(dim=-1)
        dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
        for j in range(0, N_k, B_k):
            K_j, V_j = K[:, j:j + B_k], V[:, j:j + B_k]
            dK_j, dV_j = torch.zeros_like(K_j), torch.zeros_like(V_j)
            for i in range(0, N_q, B_q):
                Q_i, dO_i = Q[:, i:i + B_q], dO[:, i:i + B_q]
                S_ij = Q_i @ K_j.transpose(-1, -2) / math.sqrt(d)
                P_ij = torch.exp(S_ij - L[:, i:i + B_q, None])
                dV_j += P_ij.transpose(-1, -2) @ dO_i
                dP_ij = dO_i @ V_j.transpose(-1, -2)
                dS_ij = P_ij * (dP_ij - D[:, i:i + B_q, None])
                dQ[:, i:i + B_q] += dS_ij @ K_j / math.sqrt(d)
                dK_j += dS_ij.transpose(-1, -2) @ Q_i / math.sqrt(d)
            dK[:, j:j + B_k] = dK_j
            dV[:, j:j + B_k] = dV_j
        return dQ, dK, dV, None


def get_flashattention_autograd_function_pytorch():
    return FlashAttentionPytorch
