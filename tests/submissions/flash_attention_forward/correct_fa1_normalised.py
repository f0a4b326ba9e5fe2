# expect:
import numpy as np


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    """FlashAttention-1's update: the output is kept normalised after every key tile."""
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    O = np.zeros(Q.shape[:-1] + (V.shape[-1],))
    L = np.zeros(Q.shape[:-1])
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        o = np.zeros(Q.shape[:-2] + (i1 - i0, V.shape[-1]))
        l = np.zeros(Q.shape[:-2] + (i1 - i0,))
        mx = np.full(Q.shape[:-2] + (i1 - i0,), -1e30)
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            if causal and j0 > i1 - 1 + m - n:
                continue
            s = Q[..., i0:i1, :] @ np.swapaxes(K[..., j0:j1, :], -1, -2) / np.sqrt(d)
            if causal:
                allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None] + m - n
                s = np.where(allowed, s, -1e6)
            m_t = s.max(axis=-1)
            p = np.exp(s - m_t[..., None])
            l_t = p.sum(axis=-1)
            m_new = np.maximum(mx, m_t)
            l_new = np.exp(mx - m_new) * l + np.exp(m_t - m_new) * l_t
            o = ((l * np.exp(mx - m_new))[..., None] * o
                 + np.exp(m_t - m_new)[..., None] * (p @ V[..., j0:j1, :])) / l_new[..., None]
            mx, l = m_new, l_new
        O[..., i0:i1, :] = o
        L[..., i0:i1] = mx + np.log(l)
    return O, L
