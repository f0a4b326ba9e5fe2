# expect:
import torch


def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta, q_proj_weight,
                                           k_proj_weight, v_proj_weight, o_proj_weight,
                                           in_features, token_positions):
    h, d_k = num_heads, d_model // num_heads
    q = torch.einsum("...sd,od->...so", in_features, q_proj_weight).unflatten(-1, (h, d_k)).movedim(-2, -3)
    k = torch.einsum("...sd,od->...so", in_features, k_proj_weight).unflatten(-1, (h, d_k)).movedim(-2, -3)
    v = torch.einsum("...sd,od->...so", in_features, v_proj_weight).unflatten(-1, (h, d_k)).movedim(-2, -3)
    freqs = theta ** (-torch.arange(0, d_k, 2, dtype=q.dtype) / d_k)
    angle = token_positions[:, None].to(q.dtype) * freqs
    turn = torch.polar(torch.ones_like(angle), angle)
    q = torch.view_as_real(torch.view_as_complex(q.unflatten(-1, (-1, 2)).contiguous()) * turn).flatten(-2)
    k = torch.view_as_real(torch.view_as_complex(k.unflatten(-1, (-1, 2)).contiguous()) * turn).flatten(-2)
    seq = in_features.shape[-2]
    bias = torch.triu(torch.full((seq, seq), float("-inf"), dtype=q.dtype), diagonal=1)
    weights = torch.softmax(torch.einsum("...qd,...kd->...qk", q, k) * d_k ** -0.5 + bias, dim=-1)
    out = torch.einsum("...qk,...kd->...qd", weights, v).movedim(-3, -2).flatten(-2)
    return torch.einsum("...sd,od->...so", out, o_proj_weight)
