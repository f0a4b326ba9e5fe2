# expect:
# Saves only the inputs and recomputes the weights in backward; einsum throughout.
import torch


class ScaledDotProductAttention(torch.autograd.Function):
    @staticmethod
    def _weights(Q, K, mask):
        S = torch.einsum("...nd,...md->...nm", Q, K) / Q.shape[-1] ** 0.5
        if mask is not None:
            S = torch.where(mask, S, torch.full_like(S, -1e9))
        S = S - S.amax(dim=-1, keepdim=True)
        E = S.exp()
        return E / E.sum(dim=-1, keepdim=True)

    @staticmethod
    def forward(ctx, Q, K, V, mask=None):
        ctx.save_for_backward(Q, K, V)
        ctx.mask = mask
        P = ScaledDotProductAttention._weights(Q, K, mask)
        return torch.einsum("...nm,...mv->...nv", P, V)

    @staticmethod
    def backward(ctx, dO):
        Q, K, V = ctx.saved_tensors
        P = ScaledDotProductAttention._weights(Q, K, ctx.mask)
        dV = torch.einsum("...nm,...nv->...mv", P, dO)
        dP = torch.einsum("...nv,...mv->...nm", dO, V)
        rowsum = torch.einsum("...nm,...nm->...n", P, dP).unsqueeze(-1)
        dS = P * (dP - rowsum) / Q.shape[-1] ** 0.5
        return (torch.einsum("...nm,...md->...nd", dS, K),
                torch.einsum("...nm,...nd->...md", dS, Q), dV, None)
