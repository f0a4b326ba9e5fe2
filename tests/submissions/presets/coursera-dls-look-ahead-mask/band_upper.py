# expect: causal-mask-transposed
import tensorflow as tf


def create_look_ahead_mask(sequence_length):
    mask = tf.linalg.band_part(tf.ones((1, sequence_length, sequence_length)), 0, -1)
    return mask
