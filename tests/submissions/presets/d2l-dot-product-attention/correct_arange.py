# expect:
import torch
from torch import nn


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ keys.transpose(-1, -2) / queries.shape[-1] ** 0.5
        if valid_lens is not None:
            lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(-1, scores.shape[1])
            positions = torch.arange(scores.shape[-1])
            blocked = positions[None, None, :] >= lens[:, :, None]
            scores = scores.masked_fill(blocked, float("-inf"))
        self.attention_weights = torch.softmax(scores, dim=-1)
        return self.dropout(self.attention_weights) @ values
