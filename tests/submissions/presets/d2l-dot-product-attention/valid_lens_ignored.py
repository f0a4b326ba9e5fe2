# expect: mask-ignored
import math

import torch
from torch import nn


class DotProductAttention(nn.Module):
    """Scaled dot product attention (valid_lens accepted, masking still to do)."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = nn.functional.softmax(scores, dim=-1)
        return torch.bmm(self.dropout(self.attention_weights), values)
# where: mask-ignored=17
