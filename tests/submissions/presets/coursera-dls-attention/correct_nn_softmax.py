# expect:
import numpy as np
import tensorflow as tf


def scaled_dot_product_attention(q, k, v, mask):
    logits = tf.linalg.matmul(q, tf.linalg.matrix_transpose(k))
    logits = logits / np.sqrt(k.shape[-1]).astype(np.float32)
    if mask is not None:
        logits = tf.where(mask > 0.5, logits, tf.fill(tf.shape(logits), -1e9))
    attention_weights = tf.nn.softmax(logits, axis=-1)
    return tf.matmul(attention_weights, v), attention_weights
