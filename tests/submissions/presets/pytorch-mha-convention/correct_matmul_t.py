# expect:
import torch


def multi_head_attention(query, key_value, W_q, W_k, W_v, W_o, num_heads, attn_mask=None):
    d_model = query.shape[-1]
    d_k = d_model // num_heads
    Q, K, V = query @ W_q.T, key_value @ W_k.T, key_value @ W_v.T
    outs = []
    for h in range(num_heads):
        part = slice(h * d_k, (h + 1) * d_k)
        s = Q[..., part] @ K[..., part].transpose(-2, -1) * d_k ** -0.5
        if attn_mask is not None:
            s = torch.where(attn_mask, torch.tensor(float("-inf"), dtype=s.dtype), s)
        outs.append(torch.softmax(s, dim=-1) @ V[..., part])
    return torch.cat(outs, dim=-1) @ W_o.T
