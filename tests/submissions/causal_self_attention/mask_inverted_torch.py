# expect: causal-mask-inverted
import math

import torch


def apply_rope(x, theta):
    n, d = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    ang = torch.arange(n, dtype=x.dtype)[:, None] * inv
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * ang.cos() - x2 * ang.sin(), x1 * ang.sin() + x2 * ang.cos()], dim=-1).flatten(-2)


def causal_self_attention(X, W_q, W_k, W_v, W_o, num_heads, theta=None):
    x = torch.as_tensor(X)
    *batch, T, C = x.shape
    hs = C // num_heads
    q = (x @ torch.as_tensor(W_q)).view(*batch, T, num_heads, hs).transpose(-3, -2)
    k = (x @ torch.as_tensor(W_k)).view(*batch, T, num_heads, hs).transpose(-3, -2)
    v = (x @ torch.as_tensor(W_v)).view(*batch, T, num_heads, hs).transpose(-3, -2)
    if theta is not None:
        q, k = apply_rope(q, theta), apply_rope(k, theta)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    bias = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = att.masked_fill(bias, float("-inf"))
    att = torch.softmax(att, dim=-1)
    y = (att @ v).transpose(-3, -2).reshape(*batch, T, C)
    return y @ torch.as_tensor(W_o)
