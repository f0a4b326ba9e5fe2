# expect:
import torch


def get_subsequent_mask(seq):
    len_s = seq.shape[1]
    return torch.tril(torch.ones(len_s, len_s, dtype=torch.bool, device=seq.device)).unsqueeze(0)
