# expect: lse-missing-scale
import numpy as np


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    n, d = Q.shape[-2], Q.shape[-1]
    m = K.shape[-2]
    scale = 1.0 / np.sqrt(d)
    O = np.zeros(Q.shape[:-1] + (V.shape[-1],))
    L = np.zeros(Q.shape[:-1])
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        q = Q[..., i0:i1, :]
        m_i = np.full(q.shape[:-1], -np.inf)
        l_i = np.zeros(q.shape[:-1])
        acc = np.zeros(q.shape[:-1] + (V.shape[-1],))
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            s = q @ np.swapaxes(K[..., j0:j1, :], -1, -2) * scale
            if causal:
                rows = np.arange(i0, i1)[:, None]
                cols = np.arange(j0, j1)[None, :]
                s = np.where(cols <= rows + (m - n), s, -np.inf)
            m_new = np.maximum(m_i, s.max(axis=-1))
            alpha = np.exp(m_i - m_new)
            p = np.exp(s - m_new[..., None])
            l_i = alpha * l_i + p.sum(axis=-1)
            acc = alpha[..., None] * acc + p @ V[..., j0:j1, :]
            m_i = m_new
        O[..., i0:i1, :] = acc / l_i[..., None]
        L[..., i0:i1] = m_i / scale + np.log(l_i)
    return O, L
# where: lse-missing-scale=31
