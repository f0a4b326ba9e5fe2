# expect: rope-on-values
import torch
import torch.nn.functional as F


def _rope(x, positions, theta):
    d = x.shape[-1]
    ang = positions[:, None].to(x.dtype) * theta ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    out = torch.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * ang.cos() - x[..., 1::2] * ang.sin()
    out[..., 1::2] = x[..., 0::2] * ang.sin() + x[..., 1::2] * ang.cos()
    return out


def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta, q_proj_weight,
                                           k_proj_weight, v_proj_weight, o_proj_weight,
                                           in_features, token_positions):
    x = in_features
    split = lambda t: t.unflatten(-1, (num_heads, -1)).transpose(-3, -2)  # noqa: E731
    q, k, v = split(F.linear(x, q_proj_weight)), split(F.linear(x, k_proj_weight)), split(F.linear(x, v_proj_weight))
    q, k, v = _rope(q, token_positions, theta), _rope(k, token_positions, theta), _rope(v, token_positions, theta)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F.linear(out.transpose(-3, -2).flatten(-2), o_proj_weight)
