# expect:
import math

import torch


class ScaledDotProductAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, mask=None):
        scale = 1.0 / math.sqrt(Q.shape[-1])
        scores = Q @ K.transpose(-2, -1) * scale
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        P = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(Q, K, V, P)
        ctx.scale = scale
        return P @ V

    @staticmethod
    def backward(ctx, grad_output):
        Q, K, V, P = ctx.saved_tensors
        dV = P.transpose(-2, -1) @ grad_output
        dP = grad_output @ V.transpose(-2, -1)
        dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True))
        dQ = dS @ K * ctx.scale
        dK = dS.transpose(-2, -1) @ Q * ctx.scale
        return dQ, dK, dV, None
