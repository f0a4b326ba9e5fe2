# expect: weight-grad-transposed
import torch


def multi_head_attention_backward(grad_output, X_q, X_kv, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    dY, xq, xkv, wq, wk, wv, wo = (torch.as_tensor(a, dtype=torch.float64) for a in
                                   (grad_output, X_q, X_kv, W_q, W_k, W_v, W_o))
    *lead, n, d_model = xq.shape
    m = xkv.shape[-2]
    d_k = d_model // num_heads

    def split(x, length):
        return x.view(*lead, length, num_heads, d_k).transpose(-2, -3)

    def merge(x, length):
        return x.transpose(-2, -3).reshape(*lead, length, d_model)

    q, k, v = split(xq @ wq, n), split(xkv @ wk, m), split(xkv @ wv, m)
    att = q @ k.transpose(-1, -2) / d_k ** 0.5
    if mask is not None:
        att = att.masked_fill(~torch.as_tensor(mask).unsqueeze(-3), float("-inf"))
    p = torch.softmax(att, dim=-1)
    c = merge(p @ v, n)
    dW_o = dY.reshape(-1, d_model).T @ c.reshape(-1, d_model)
    dc = split(dY @ wo.T, n)
    dv = p.transpose(-1, -2) @ dc
    dp = dc @ v.transpose(-1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdim=True))
    dq = merge(ds @ k / d_k ** 0.5, n)
    dk = merge(ds.transpose(-1, -2) @ q / d_k ** 0.5, m)
    dv = merge(dv, m)
    dW_q = dq.reshape(-1, d_model).T @ xq.reshape(-1, d_model)
    dW_k = dk.reshape(-1, d_model).T @ xkv.reshape(-1, d_model)
    dW_v = dv.reshape(-1, d_model).T @ xkv.reshape(-1, d_model)
    dX_q = dq @ wq.T
    dX_kv = dk @ wk.T + dv @ wv.T
    return dX_q, dX_kv, dW_q, dW_k, dW_v, dW_o
# where: weight-grad-transposed=25
