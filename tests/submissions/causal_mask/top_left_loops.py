# expect: causal-mask-top-left
def causal_mask(n, m=None):
    m = n if m is None else m
    return [[1.0 if j <= i else 0.0 for j in range(m)] for i in range(n)]
