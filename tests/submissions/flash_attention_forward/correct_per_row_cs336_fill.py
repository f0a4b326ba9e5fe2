# expect:
import numpy as np


def flash_attention_forward(Q, K, V, causal=False, block_q=16, block_k=16):
    """Per-row loops inside each tile; a -1e6 fill, exp multiplied by the keep mask; L as a
    running logaddexp of the tiles' logsumexps."""
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    lead = Q.shape[:-2]
    n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    Qf = Q.reshape(-1, n, d)
    Kf = K.reshape(-1, m, d)
    Vf = V.reshape(-1, m, V.shape[-1])
    O = np.zeros((Qf.shape[0], n, V.shape[-1]))
    L = np.zeros((Qf.shape[0], n))
    for b in range(Qf.shape[0]):
        for i0 in range(0, n, block_q):
            for i in range(i0, min(i0 + block_q, n)):
                run_max, run_sum, lse = -np.inf, 0.0, -np.inf
                acc = np.zeros(V.shape[-1])
                for j0 in range(0, m, block_k):
                    j1 = min(j0 + block_k, m)
                    s = Kf[b, j0:j1] @ Qf[b, i] / np.sqrt(d)
                    keep = np.ones(j1 - j0)
                    if causal:
                        keep = (np.arange(j0, j1) <= i + m - n).astype(float)
                        s = np.where(keep > 0, s, -1e6)
                    new_max = max(run_max, s.max())
                    e = np.exp(s - new_max) * keep
                    scale = np.exp(run_max - new_max)
                    run_sum = run_sum * scale + e.sum()
                    acc = acc * scale + e @ Vf[b, j0:j1]
                    if e.sum() > 0:
                        lse = np.logaddexp(lse, new_max + np.log(e.sum()))
                    run_max = new_max
                O[b, i] = acc / run_sum
                L[b, i] = lse
    return O.reshape(lead + (n, V.shape[-1])), L.reshape(lead + (n,))
