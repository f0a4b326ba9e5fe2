# expect:
import torch
import torch.nn.functional as F


def multi_head_attention(query, key_value, W_q, W_k, W_v, W_o, num_heads, attn_mask=None):
    def split(x):
        return x.unflatten(-1, (num_heads, -1)).transpose(-3, -2)

    q, k, v = split(query @ W_q.T), split(key_value @ W_k.T), split(key_value @ W_v.T)
    keep = None if attn_mask is None else ~attn_mask.unsqueeze(-3)
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    return heads.transpose(-3, -2).flatten(-2) @ W_o.T
