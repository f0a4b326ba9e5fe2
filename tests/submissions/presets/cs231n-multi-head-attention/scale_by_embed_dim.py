# expect: scale-by-dmodel
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.1):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.key = nn.Linear(embed_dim, embed_dim)
        self.query = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.attn_drop = nn.Dropout(dropout)
        self.n_head = num_heads
        self.emd_dim = embed_dim
        self.head_dim = self.emd_dim // self.n_head

    def forward(self, query, key, value, attn_mask=None):
        N, S, E = query.shape
        N, T, E = value.shape
        H = self.n_head
        q = self.query(query).view(N, S, H, E // H).transpose(1, 2)
        k = self.key(key).view(N, T, H, E // H).transpose(1, 2)
        v = self.value(value).view(N, T, H, E // H).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.emd_dim)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask == 0, float("-inf"))
        attn = self.attn_drop(F.softmax(scores, dim=-1))
        y = torch.matmul(attn, v).transpose(1, 2).reshape(N, S, E)
        return self.proj(y)
# where: scale-by-dmodel=29
