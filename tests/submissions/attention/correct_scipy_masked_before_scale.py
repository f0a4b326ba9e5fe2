# expect:
import numpy as np
import scipy.special


def scaled_dot_product_attention(Q, K, V, mask=None):
    raw = np.matmul(Q, np.swapaxes(K, -2, -1))
    if mask is not None:
        raw = np.where(mask, raw, -1e4)
    return scipy.special.softmax(raw / np.sqrt(Q.shape[-1]), axis=-1) @ V
