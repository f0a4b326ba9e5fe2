# expect:
# fails: tiling
# Exact, and passes every output test: the whole score matrix at once, O = softmax(S) V and
# L = logsumexp(S), never a tile. Only the tiling check can tell.
import math

import torch


class FlashAttentionPytorch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        S = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
        if is_causal:
            n_q, n_k = Q.shape[-2], K.shape[-2]
            future = torch.arange(n_k)[None, :] > torch.arange(n_q)[:, None]
            S = S + torch.where(future, -1e6, 0.0)
        P = torch.softmax(S, dim=-1)
        O = P @ V
        L = torch.logsumexp(S, dim=-1)
        ctx.save_for_backward(L, Q, K, V, O)
        ctx.is_causal = is_causal
        return O

    @staticmethod
    def backward(ctx, grad_out):
        raise NotImplementedError


def get_flashattention_autograd_function_pytorch():
    return FlashAttentionPytorch
