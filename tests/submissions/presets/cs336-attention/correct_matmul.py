# expect:
import torch


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    x = x - x.amax(dim=dim, keepdim=True)
    e = x.exp()
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / (K.shape[-1] ** 0.5)
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    return softmax(scores, dim=-1) @ V
