# expect:
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
        q = self.query(query).reshape(N, S, self.n_head, self.head_dim)
        k = self.key(key).reshape(N, T, self.n_head, self.head_dim)
        v = self.value(value).reshape(N, T, self.n_head, self.head_dim)
        scores = torch.einsum("nshd,nthd->nhst", q, k) / self.head_dim ** 0.5
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask.bool(), -1e9)
        attn = self.attn_drop(scores.softmax(dim=-1))
        out = torch.einsum("nhst,nthd->nshd", attn, v).reshape(N, S, E)
        return self.proj(out)
