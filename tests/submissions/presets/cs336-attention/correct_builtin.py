# expect:
import torch.nn.functional as F


def scaled_dot_product_attention(Q, K, V, mask=None):
    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
