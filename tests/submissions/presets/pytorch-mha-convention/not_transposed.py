# expect: projection-transposed
import math

import torch


def multi_head_attention(query, key_value, W_q, W_k, W_v, W_o, num_heads, attn_mask=None):
    *batch, n, d_model = query.shape
    m = key_value.shape[-2]
    d_k = d_model // num_heads
    q = (query @ W_q).view(*batch, n, num_heads, d_k).transpose(-3, -2)
    k = (key_value @ W_k).view(*batch, m, num_heads, d_k).transpose(-3, -2)
    v = (key_value @ W_v).view(*batch, m, num_heads, d_k).transpose(-3, -2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask.unsqueeze(-3), float("-inf"))
    heads = scores.softmax(dim=-1) @ v
    return heads.transpose(-3, -2).reshape(*batch, n, d_model) @ W_o
# where: projection-transposed=11
