# expect: causal-mask-inverted
import torch


def subsequent_mask(size):
    "An additive mask: 0 where a position may attend, -inf where it may not (the course's own `masked_fill(mask == 0, -1e9)` reads it inverted)."
    keep = torch.tril(torch.ones(size, size, dtype=torch.bool))
    return torch.zeros(1, size, size).masked_fill(~keep, float("-inf"))
