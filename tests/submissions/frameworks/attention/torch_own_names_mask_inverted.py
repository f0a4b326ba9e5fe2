# expect: mask-inverted
import torch


def scaled_dot_product_attention(query, key, value, attn_mask=None):
    query, key, value = (torch.as_tensor(a) for a in (query, key, value))
    scores = query @ key.transpose(-2, -1) / query.shape[-1] ** 0.5
    if attn_mask is not None:
        scores = torch.where(torch.as_tensor(attn_mask), float("-inf"), scores)
    weights = torch.softmax(scores, dim=-1)
    return weights @ value, weights
# where: mask-inverted=9
