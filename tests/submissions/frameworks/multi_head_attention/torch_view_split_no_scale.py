# expect: split-without-transpose no-scaling
import torch


def _heads(x, num_heads):
    *batch, n, d_model = x.shape
    return x.view(*batch, num_heads, n, d_model // num_heads)


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x_q, x_kv = torch.as_tensor(X_q), torch.as_tensor(X_kv)
    *batch, n, d_model = x_q.shape
    q = _heads(x_q @ torch.as_tensor(W_q), num_heads)
    k = _heads(x_kv @ torch.as_tensor(W_k), num_heads)
    v = _heads(x_kv @ torch.as_tensor(W_v), num_heads)
    att = q @ k.transpose(-2, -1)
    if mask is not None:
        att = att.masked_fill(~torch.as_tensor(mask).unsqueeze(-3), float("-inf"))
    att = torch.softmax(att, dim=-1)
    heads = (att @ v).transpose(-2, -3).reshape(*batch, n, d_model)
    return heads @ torch.as_tensor(W_o)
# where: split-without-transpose=7 no-scaling=16
