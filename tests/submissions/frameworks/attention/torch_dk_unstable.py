# expect: scale-by-dk unstable-softmax
import torch


def scaled_dot_product_attention(Q, K, V, mask=None):
    q, k, v = (torch.as_tensor(a) for a in (Q, K, V))
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / d_k
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(mask), -1e9)
    e = torch.exp(scores)
    weights = e / e.sum(dim=-1, keepdim=True)
    return torch.matmul(weights, v), weights
# where: scale-by-dk=8 unstable-softmax=11
