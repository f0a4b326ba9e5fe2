# expect:
# After a first edit: the causal mask is (T, C), and masked_fill raises torch's (8) ... (3).
import torch


def causal_self_attention(X, W_q, W_k, W_v, W_o, num_heads, theta=None):
    x = torch.as_tensor(X)
    T, C = x.shape[-2:]
    hs = C // num_heads
    q = (x @ torch.as_tensor(W_q)).view(*x.shape[:-2], T, num_heads, hs).transpose(-2, -3)
    k = (x @ torch.as_tensor(W_k)).view(*x.shape[:-2], T, num_heads, hs).transpose(-2, -3)
    v = (x @ torch.as_tensor(W_v)).view(*x.shape[:-2], T, num_heads, hs).transpose(-2, -3)
    att = q @ k.transpose(-2, -1) / hs ** 0.5
    bias = torch.tril(torch.ones(T, C, dtype=torch.bool))
    att = att.masked_fill(~bias, float("-inf"))
    att = att.softmax(dim=-1)
    y = (att @ v).transpose(-2, -3).reshape(*x.shape[:-2], T, C)
    return y @ torch.as_tensor(W_o)
