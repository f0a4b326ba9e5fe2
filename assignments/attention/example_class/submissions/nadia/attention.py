import numpy as np

def scaled_dot_product_attention(Q, K, V, mask=None)
    return Q
