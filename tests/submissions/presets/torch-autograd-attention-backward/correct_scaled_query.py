# expect:
# Q scaled before the product, a Jacobian-vector product written with the diagonal term apart.
import torch


class ScaledDotProductAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, mask=None):
        scale = Q.shape[-1] ** -0.5
        S = (Q * scale) @ K.transpose(-1, -2)
        if mask is not None:
            S = S.masked_fill(mask.logical_not(), torch.finfo(S.dtype).min)
        P = S.softmax(dim=-1)
        ctx.save_for_backward(Q, K, V, P)
        ctx.scale = scale
        return P @ V

    @staticmethod
    def backward(ctx, grad_output):
        Q, K, V, P = ctx.saved_tensors
        grad_V = P.transpose(-1, -2) @ grad_output
        grad_P = grad_output @ V.transpose(-1, -2)
        diagonal = P * grad_P
        grad_S = diagonal - P * diagonal.sum(-1, keepdim=True)
        grad_S = grad_S * ctx.scale
        return grad_S @ K, grad_S.transpose(-1, -2) @ Q, grad_V, None
