# expect: online-output-not-rescaled
import numpy as np

LOG2E = 1.4426950408889634


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    """float32, base-2 exponentials; the accumulator keeps its old scale."""
    Q, K, V = (np.asarray(x, dtype=np.float32) for x in (Q, K, V))
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    c = np.float32(LOG2E / np.sqrt(d))
    O = np.empty(Q.shape[:-1] + (V.shape[-1],), dtype=np.float32)
    L = np.empty(Q.shape[:-1], dtype=np.float32)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        raw_max = None
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            raw = Q[..., i0:i1, :] @ np.swapaxes(K[..., j0:j1, :], -1, -2)
            if causal:
                visible = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None] + (m - n)
                raw = np.where(visible, raw, np.finfo(np.float32).min)
            tile_max = raw.max(axis=-1)
            if raw_max is None:
                raw_max = tile_max
                p = np.exp2((raw - raw_max[..., None]) * c)
                total = p.sum(axis=-1)
                acc = p @ V[..., j0:j1, :]
                continue
            new_max = np.maximum(raw_max, tile_max)
            alpha = np.exp2((raw_max - new_max) * c)
            p = np.exp2((raw - new_max[..., None]) * c)
            total = alpha * total + p.sum(axis=-1)
            acc = acc + p @ V[..., j0:j1, :]
            raw_max = new_max
        O[..., i0:i1, :] = acc / total[..., None]
        L[..., i0:i1] = (raw_max * c + np.log2(total)) / np.float32(LOG2E)
    return O, L
# where: online-output-not-rescaled=34
