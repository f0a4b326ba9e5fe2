# expect: mask-inverted
import math

import torch


def attention(query, key, value, mask=None, dropout=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 1, -1e9)  # blocks the keys it should keep
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn
# where: mask-inverted=10
