# expect:
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


def precompute_rotary_emb(dim, max_positions):
    rope_cache = None
    ### YOUR CODE HERE ###
    inv = 10000.0 ** (-torch.arange(0, dim, 2).float() / dim)
    angles = torch.outer(torch.arange(max_positions).float(), inv)
    rope_cache = torch.stack((angles.cos(), angles.sin()), dim=-1)
    ### END YOUR CODE ###
    return rope_cache


def apply_rotary_emb(x, rope_cache):
    rotated_x = None
    ### YOUR CODE HERE ###
    T = x.shape[2]
    cache = torch.view_as_complex(rope_cache[:T].float().contiguous())
    x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    rotated_x = torch.view_as_real(x_c * cache).reshape(x.shape).type_as(x)
    ### END YOUR CODE ###
    return rotated_x


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.key = nn.Linear(config.n_embd, config.n_embd)
        self.query = nn.Linear(config.n_embd, config.n_embd)
        self.value = nn.Linear(config.n_embd, config.n_embd)

        self.rope = config.rope
        if self.rope:
            assert (config.n_embd % config.n_head) % 2 == 0
            rope_cache = None
            ### YOUR CODE HERE ###
            rope_cache = precompute_rotary_emb(config.n_embd // config.n_head, config.block_size)
            ### END YOUR CODE ###
            self.register_buffer("rope_cache", rope_cache)

        self.attn_drop = nn.Dropout(config.attn_pdrop)
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head

    def forward(self, x):
        B, T, C = x.size()
        k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)

        if self.rope:
            ### YOUR CODE HERE ###
            q = apply_rotary_emb(q, self.rope_cache)
            k = apply_rotary_emb(k, self.rope_cache)
            ### END YOUR CODE ###

        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, -1e10)
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))
