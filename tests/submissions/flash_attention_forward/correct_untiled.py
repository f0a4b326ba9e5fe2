# expect:
# fails: tiling (one full softmax: exact, but it materialises the n x m scores)
import numpy as np


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    """Not tiled at all: one softmax over the whole score matrix (exact)."""
    n, m = Q.shape[-2], K.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if causal:
        S = np.where(np.tril(np.ones((n, m), dtype=bool), k=m - n), S, -np.inf)
    top = S.max(axis=-1, keepdims=True)
    E = np.exp(S - top)
    total = E.sum(axis=-1, keepdims=True)
    return E @ V / total, (top + np.log(total))[..., 0]
