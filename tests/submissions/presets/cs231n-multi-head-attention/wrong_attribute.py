# expect:
# error: wrong-signature
# (a class whose layers are not where the course's starter code puts them: a wrong-signature
# error naming the attribute, not a crash)
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.1):
        super().__init__()
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, attn_mask=None):
        return self.out(query)
