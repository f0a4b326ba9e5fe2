# expect: pe-exponent-uses-feature
import numpy as np
import tensorflow as tf


def get_angles(pos, k, d):
    angles = pos / np.power(10000, (2 * k) / np.float32(d))
    return angles


def positional_encoding(positions, d):
    angle_rads = get_angles(np.arange(positions)[:, np.newaxis],
                            np.arange(d)[np.newaxis, :],
                            d)
    angle_rads[:, 0::2] = np.sin(angle_rads[:, 0::2])
    angle_rads[:, 1::2] = np.cos(angle_rads[:, 1::2])
    pos_encoding = angle_rads[np.newaxis, ...]
    return tf.cast(pos_encoding, dtype=tf.float32)
