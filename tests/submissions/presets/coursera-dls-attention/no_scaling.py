# expect: no-scaling
import tensorflow as tf


def scaled_dot_product_attention(q, k, v, mask):
    scaled_attention_logits = tf.matmul(q, k, transpose_b=True)
    if mask is not None:
        scaled_attention_logits += (1. - mask) * -1e9
    attention_weights = tf.nn.softmax(scaled_attention_logits, axis=-1)
    return tf.matmul(attention_weights, v), attention_weights
# where: no-scaling=6
