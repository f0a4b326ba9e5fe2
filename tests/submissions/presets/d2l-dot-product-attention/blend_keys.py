# expect: blend-keys
import math

import torch
from torch import nn


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        self.attention_weights = torch.softmax(scores, dim=-1)
        return torch.bmm(self.attention_weights, keys)
# where: blend-keys=16
