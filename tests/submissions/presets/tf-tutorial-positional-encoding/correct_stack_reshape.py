# expect:
# A student's interleaving by stacking the two halves pair by pair; the tutorial's tf.cast is
# replaced by a float32 NumPy array (TensorFlow is not installed where these fixtures run).
import numpy as np


def get_angles(pos, i, d_model):
    return pos / np.power(10000, 2 * i / np.float32(d_model))


def positional_encoding(position, d_model):
    angles = get_angles(np.arange(position)[:, np.newaxis],
                        np.arange(d_model // 2)[np.newaxis, :], d_model)
    pos_encoding = np.stack([np.sin(angles), np.cos(angles)], axis=-1)
    pos_encoding = pos_encoding.reshape(position, d_model)[np.newaxis, ...]
    return pos_encoding.astype(np.float32)
