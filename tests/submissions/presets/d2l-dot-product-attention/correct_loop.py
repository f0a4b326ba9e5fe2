# expect:
import math

import torch
from torch import nn


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        outputs, weights = [], []
        for b in range(queries.shape[0]):
            scores = queries[b] @ keys[b].T / math.sqrt(keys.shape[-1])
            if valid_lens is not None:
                lens = valid_lens[b]
                for i in range(scores.shape[0]):
                    n_valid = int(lens[i] if lens.dim() else lens)
                    scores[i, n_valid:] = -1e6
            w = torch.softmax(scores, dim=-1)
            weights.append(w)
            outputs.append(self.dropout(w) @ values[b])
        self.attention_weights = torch.stack(weights)
        return torch.stack(outputs)
