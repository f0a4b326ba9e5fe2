# expect: blend-keys
import math

import torch
from torch import nn


def masked_softmax(X, valid_lens):
    """d2l's masked softmax: positions past valid_lens get -1e6 before the softmax."""
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1])
    keep = torch.arange(shape[-1], device=X.device)[None, :] < valid_lens[:, None]
    X = X.masked_fill(~keep, -1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.attention_weights, keys)
# where: blend-keys=31
