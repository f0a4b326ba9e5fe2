# expect: mask-zero-fill softmax-over-queries
import math

import torch


def scaled_dot_product_attention(Q, K, V, mask=None):
    q, k, v = (torch.as_tensor(a) for a in (Q, K, V))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(mask), 0.0)
    weights = torch.softmax(scores, dim=-2)
    return weights @ v, weights
# where: mask-zero-fill=11 softmax-over-queries=12
