# expect:
import numpy as np
import tensorflow as tf


def create_look_ahead_mask(sequence_length):
    mask = np.tril(np.ones((sequence_length, sequence_length), dtype=np.float32))
    return tf.convert_to_tensor(mask[np.newaxis, ...])
