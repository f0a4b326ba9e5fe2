# expect: dv-not-transposed
import math

import torch


class ScaledDotProductAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, mask=None):
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        P = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(Q, K, V, P)
        return P @ V

    @staticmethod
    def backward(ctx, grad_output):
        Q, K, V, P = ctx.saved_tensors
        dV = P @ grad_output
        dP = grad_output @ V.transpose(-2, -1)
        dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True))
        dS = dS / math.sqrt(Q.shape[-1])
        return dS @ K, dS.transpose(-2, -1) @ Q, dV, None
