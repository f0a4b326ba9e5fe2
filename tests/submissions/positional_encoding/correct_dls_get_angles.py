# expect:
import numpy as np


def get_angles(pos, k, d):
    i = k // 2
    angles = pos / np.power(10000, 2 * i / np.float32(d))
    return angles


def positional_encoding(n_positions, d_model):
    angle_rads = get_angles(np.arange(n_positions)[:, np.newaxis], np.arange(d_model)[np.newaxis, :], d_model)
    angle_rads[:, 0::2] = np.sin(angle_rads[:, 0::2])
    angle_rads[:, 1::2] = np.cos(angle_rads[:, 1::2])
    return angle_rads
