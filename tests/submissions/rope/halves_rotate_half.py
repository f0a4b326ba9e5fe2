# expect: rope-halves-not-interleaved
import numpy as np


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope(x, positions=None, theta=10000.0):
    n, d = x.shape[-2], x.shape[-1]
    p = np.arange(n) if positions is None else np.asarray(positions)
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2) / d)
    freqs = np.outer(p, inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)
