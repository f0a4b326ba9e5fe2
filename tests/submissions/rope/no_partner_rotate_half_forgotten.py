# expect: rope-halves-not-interleaved rope-no-rotation-partner
import numpy as np


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2], x.shape[-1]
    p = np.arange(n) if positions is None else np.asarray(positions)
    freqs = np.outer(p, theta ** (-np.arange(0, d, 2) / d))
    emb = np.concatenate([freqs, freqs], axis=-1)
    return x * np.cos(emb) + x * np.sin(emb)
