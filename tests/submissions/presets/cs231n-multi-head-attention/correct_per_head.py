# expect:
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
        Q, K, V = self.query(query), self.key(key), self.value(value)
        heads = []
        for h in range(self.n_head):
            cols = slice(h * self.head_dim, (h + 1) * self.head_dim)
            s = Q[..., cols] @ K[..., cols].transpose(1, 2) / math.sqrt(self.head_dim)
            if attn_mask is not None:
                s = s.masked_fill(attn_mask == 0, float("-inf"))
            heads.append(self.attn_drop(torch.softmax(s, dim=-1)) @ V[..., cols])
        return self.proj(torch.cat(heads, dim=-1))
