# expect: pe-sin-cos-swapped
import numpy as np
import tensorflow as tf


def get_angles(pos, k, d):
    i = k // 2
    return pos / np.power(10000, (2 * i) / np.float32(d))


def positional_encoding(positions, d):
    angle_rads = get_angles(np.arange(positions)[:, np.newaxis], np.arange(d)[np.newaxis, :], d)
    angle_rads[:, 0::2] = np.cos(angle_rads[:, 0::2])
    angle_rads[:, 1::2] = np.sin(angle_rads[:, 1::2])
    return tf.cast(angle_rads[np.newaxis, ...], dtype=tf.float32)
