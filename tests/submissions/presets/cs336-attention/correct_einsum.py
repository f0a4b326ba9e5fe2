# expect:
import math

import torch
from torch import Tensor


def scaled_dot_product_attention(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None) -> Tensor:
    d_k = Q.shape[-1]
    scores = torch.einsum("... q d, ... k d -> ... q k", Q, K) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    scores = scores - scores.max(dim=-1, keepdim=True).values
    exp = torch.exp(scores)
    probs = exp / exp.sum(dim=-1, keepdim=True)
    return torch.einsum("... q k, ... k v -> ... q v", probs, V)
