# expect: scale-after-softmax scale-by-dk
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = K.shape[-1]
    logits = np.einsum("...qd,...kd->...qk", Q, K)
    if mask is not None:
        logits = np.where(mask, logits, -1e9)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True) / d_k
    return np.einsum("...qk,...kv->...qv", p, V), p
# where: scale-by-dk=11 scale-after-softmax=11
