# expect:
def causal_mask(n, m=None):
    if m is None:
        m = n
    mask = [[False] * m for _ in range(n)]
    for i in range(n):
        for j in range(m):
            mask[i][j] = j <= m - n + i
    return mask
