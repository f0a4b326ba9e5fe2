# expect: causal-mask-inverted
import tensorflow as tf


def create_look_ahead_mask(sequence_length):
    # the earlier version of the notebook: 1 marks the positions to hide
    mask = 1 - tf.linalg.band_part(tf.ones((1, sequence_length, sequence_length)), -1, 0)
    return mask
