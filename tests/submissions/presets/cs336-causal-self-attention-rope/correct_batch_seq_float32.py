# expect:
# A CS336 student's adapter: in_features unpacked as (batch, seq_len, d_model), heads split
# with view, RoPE by a float32 rotation table (torch's default dtype) applied with einsum.
import math

import torch


def _rope_table(d_k, theta, max_seq_len):
    inv_freq = 1.0 / theta ** (torch.arange(0, d_k, 2).float() / d_k)
    angles = torch.arange(max_seq_len).float()[:, None] * inv_freq[None, :]
    return torch.stack((angles.cos(), angles.sin()), dim=-1)  # (max_seq_len, d_k/2, 2)


def _rope(x, table, token_positions):
    cos_sin = table[token_positions]
    cos, sin = cos_sin[..., 0], cos_sin[..., 1]
    pairs = x.unflatten(-1, (-1, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta, q_proj_weight,
                                           k_proj_weight, v_proj_weight, o_proj_weight,
                                           in_features, token_positions=None):
    batch, seq_len, _ = in_features.shape
    d_k = d_model // num_heads
    if token_positions is None:
        token_positions = torch.arange(seq_len)
    qkv = torch.einsum("bsd,ed->bse", in_features,
                       torch.cat([q_proj_weight, k_proj_weight, v_proj_weight]))
    q, k, v = (t.view(batch, seq_len, num_heads, d_k).transpose(1, 2) for t in qkv.split(d_model, -1))
    table = _rope_table(d_k, theta, max_seq_len)
    q, k = _rope(q, table, token_positions), _rope(k, table, token_positions)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d_k)
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("bhqk,bhkd->bhqd", weights, v).transpose(1, 2).reshape(batch, seq_len, d_model)
    return torch.einsum("bsd,ed->bse", out, o_proj_weight)
