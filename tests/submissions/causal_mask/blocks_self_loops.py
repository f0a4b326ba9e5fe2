# expect: causal-mask-blocks-self
def causal_mask(n, m=None):
    m = n if m is None else m
    offset = m - n
    return [[j < i + offset for j in range(m)] for i in range(n)]
