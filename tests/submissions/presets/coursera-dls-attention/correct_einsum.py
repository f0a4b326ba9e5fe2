# expect:
import tensorflow as tf


def scaled_dot_product_attention(q, k, v, mask):
    dk = tf.cast(tf.shape(k)[-1], q.dtype)
    logits = tf.einsum("...qd,...kd->...qk", q, k) * tf.math.rsqrt(dk)
    if mask is not None:
        logits += (1.0 - tf.cast(mask, logits.dtype)) * -1e9
    attention_weights = tf.nn.softmax(logits)
    return tf.einsum("...qk,...kv->...qv", attention_weights, v), attention_weights
