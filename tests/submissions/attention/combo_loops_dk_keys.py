# expect: blend-keys scale-by-dk
import numpy as np


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Loop style, dividing by d_k and averaging the keys."""
    Q, K = np.asarray(Q, float), np.asarray(K, float)
    out_shape = Q.shape[:-1] + (K.shape[-1],)
    out = np.zeros(out_shape)
    for idx in np.ndindex(Q.shape[:-2]):
        q, k = Q[idx], K[idx]
        m = None if mask is None else np.broadcast_to(mask, Q.shape[:-1] + (K.shape[-2],))[idx]
        for i in range(q.shape[0]):
            s = np.array([q[i] @ k[j] for j in range(k.shape[0])]) / q.shape[-1]
            if m is not None:
                s = np.where(m[i], s, -1e9)
            w = np.exp(s - s.max())
            w /= w.sum()
            out[idx + (i,)] = w @ k
    return out
# where: scale-by-dk=14 blend-keys=19
