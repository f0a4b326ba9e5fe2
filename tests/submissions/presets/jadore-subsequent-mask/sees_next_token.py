# expect: causal-mask-sees-next
import torch


def get_subsequent_mask(seq):
    len_s = seq.size(1)
    return torch.tril(torch.ones((1, len_s, len_s), device=seq.device), diagonal=1).bool()
