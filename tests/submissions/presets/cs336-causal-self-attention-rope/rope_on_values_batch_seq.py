# expect: rope-on-values
# The same adapter, (batch, seq_len, d_model) and float32 tables, rotating the values too.
import math

import torch


def _rope(x, theta, token_positions):
    d_k = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, d_k, 2).float() / d_k)
    angles = token_positions.float()[..., None] * inv_freq
    pairs = x.unflatten(-1, (-1, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    return torch.stack((even * angles.cos() - odd * angles.sin(),
                        even * angles.sin() + odd * angles.cos()), dim=-1).flatten(-2)


def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta, q_proj_weight,
                                           k_proj_weight, v_proj_weight, o_proj_weight,
                                           in_features, token_positions=None):
    batch, seq_len, _ = in_features.shape
    d_k = d_model // num_heads
    if token_positions is None:
        token_positions = torch.arange(seq_len)

    def heads(w):
        return (in_features @ w.T).view(batch, seq_len, num_heads, d_k).transpose(1, 2)

    q, k, v = (_rope(heads(w), theta, token_positions)
               for w in (q_proj_weight, k_proj_weight, v_proj_weight))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return out.transpose(1, 2).reshape(batch, seq_len, d_model) @ o_proj_weight.T
