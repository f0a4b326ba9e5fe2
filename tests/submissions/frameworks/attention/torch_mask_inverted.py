# expect: mask-inverted
import math

import torch


def scaled_dot_product_attention(Q, K, V, mask=None):
    q, k, v = (torch.as_tensor(a) for a in (Q, K, V))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        keep = torch.as_tensor(mask, dtype=torch.bool)
        scores = scores.masked_fill(keep, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights @ v).numpy(), weights.numpy()
# where: mask-inverted=12
