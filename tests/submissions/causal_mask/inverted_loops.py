# expect: causal-mask-inverted
def causal_mask(n, m=None):
    m = n if m is None else m
    return [[1 if j > i + m - n else 0 for j in range(m)] for i in range(n)]
