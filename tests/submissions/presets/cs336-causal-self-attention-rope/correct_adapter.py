# expect:
import math

import torch


def _rope(x, positions, theta):
    d = x.shape[-1]
    inv = theta ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    ang = positions[..., None].to(x.dtype) * inv
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * ang.cos() - x2 * ang.sin(), x1 * ang.sin() + x2 * ang.cos()), -1).flatten(-2)


def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta, q_proj_weight,
                                           k_proj_weight, v_proj_weight, o_proj_weight,
                                           in_features, token_positions):
    *batch, seq, _ = in_features.shape
    d_k = d_model // num_heads

    def heads(w):
        return (in_features @ w.T).view(*batch, seq, num_heads, d_k).transpose(-3, -2)

    q, k, v = heads(q_proj_weight), heads(k_proj_weight), heads(v_proj_weight)
    q, k = _rope(q, token_positions, theta), _rope(k, token_positions, theta)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    scores = scores.masked_fill(~causal, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return out.transpose(-3, -2).reshape(*batch, seq, d_model) @ o_proj_weight.T
