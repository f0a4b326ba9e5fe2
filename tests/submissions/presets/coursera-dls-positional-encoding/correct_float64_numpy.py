# expect:
import numpy as np
import tensorflow as tf


def positional_encoding(positions, d):
    k = np.arange(d)
    angles = np.arange(positions)[:, None] / 10000 ** (2 * (k // 2) / d)
    pe = np.where(k % 2 == 0, np.sin(angles), np.cos(angles))
    return tf.cast(pe[None], tf.float32)
