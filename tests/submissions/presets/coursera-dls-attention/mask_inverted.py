# expect: mask-inverted
import tensorflow as tf


def scaled_dot_product_attention(q, k, v, mask):
    matmul_qk = tf.matmul(q, k, transpose_b=True)
    dk = tf.cast(tf.shape(k)[-1], tf.float32)
    scaled_attention_logits = matmul_qk / tf.math.sqrt(dk)
    if mask is not None:
        scaled_attention_logits += mask * -1e9
    attention_weights = tf.keras.activations.softmax(scaled_attention_logits, axis=-1)
    return tf.matmul(attention_weights, v), attention_weights
# where: mask-inverted=10
