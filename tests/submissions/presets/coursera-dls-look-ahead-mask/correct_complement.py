# expect:
import tensorflow as tf


def create_look_ahead_mask(sequence_length):
    future = 1 - tf.linalg.band_part(tf.ones((sequence_length, sequence_length)), -1, 0)
    return tf.expand_dims(1 - future, 0)
