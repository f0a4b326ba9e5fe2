# expect:
import torch
import torch.nn.functional as F


def attention(query, key, value, mask=None, dropout=None):
    scale = query.shape[-1] ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", query, key) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), float("-inf"))
    p_attn = F.softmax(scores, dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return p_attn @ value, p_attn
