# expect: missing-output-projection
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.1):
        super().__init__()
        self.key = nn.Linear(embed_dim, embed_dim)
        self.query = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.attn_drop = nn.Dropout(dropout)
        self.n_head = num_heads
        self.head_dim = embed_dim // num_heads

    def forward(self, query, key, value, attn_mask=None):
        N, S, E = query.shape
        T = value.shape[1]
        H, D = self.n_head, self.head_dim
        q = self.query(query).view(N, S, H, D).transpose(1, 2)
        k = self.key(key).view(N, T, H, D).transpose(1, 2)
        v = self.value(value).view(N, T, H, D).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask == 0, float("-inf"))
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(N, S, E)
# where: missing-output-projection=29
