# expect:
import tensorflow as tf


def positional_encoding(positions, d):
    pos = tf.range(positions, dtype=tf.float32)[:, tf.newaxis]
    i = tf.range(d, dtype=tf.float32)[tf.newaxis, :] // 2
    angles = pos / tf.pow(10000.0, 2 * i / d)
    even = tf.sin(angles[:, 0::2])
    odd = tf.cos(angles[:, 1::2])
    interleaved = tf.reshape(tf.stack([even, odd], axis=-1), (positions, d))
    return interleaved[tf.newaxis, ...]
