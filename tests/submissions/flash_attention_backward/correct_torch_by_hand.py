# expect: 
import math

import torch


def flash_attention_backward(grad_output, Q, K, V, O, L, causal=False, block_q=16, block_k=16):
    # torch tensors, tiles by hand (CS336 style), float64 kept
    dO, Q, K, V, O, L = (torch.as_tensor(x, dtype=torch.float64)
                         for x in (grad_output, Q, K, V, O, L))
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    scale = 1 / math.sqrt(d)
    D = (dO * O).sum(dim=-1)
    dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
    for j in range(math.ceil(m / block_k)):
        ks = slice(j * block_k, min((j + 1) * block_k, m))
        for i in range(math.ceil(n / block_q)):
            qs = slice(i * block_q, min((i + 1) * block_q, n))
            S = Q[..., qs, :] @ K[..., ks, :].transpose(-1, -2) * scale
            if causal:
                rows = torch.arange(qs.start, qs.stop)[:, None] + (m - n)
                cols = torch.arange(ks.start, ks.stop)[None, :]
                S = S.masked_fill(cols > rows, -1e6)
            P = torch.exp(S - L[..., qs, None])
            dV[..., ks, :] += P.transpose(-1, -2) @ dO[..., qs, :]
            dS = P * (dO[..., qs, :] @ V[..., ks, :].transpose(-1, -2) - D[..., qs, None])
            dQ[..., qs, :] += dS @ K[..., ks, :] * scale
            dK[..., ks, :] += dS.transpose(-1, -2) @ Q[..., qs, :] * scale
    return dQ, dK, dV
