# expect:
import math

import torch


def attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-1, -2)
    scores = scores / math.sqrt(key.size(-1))
    if mask is not None:
        scores = torch.where(mask == 0, torch.full_like(scores, -1e9), scores)
    scores = scores - scores.amax(dim=-1, keepdim=True)
    weights = scores.exp()
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ value, weights
