# expect: softmax-backward-wrong-axis
# The weighted sum always taken over the last axis, whatever dim the layer was built with: the
# layer in ScaledDotProductAttention (dim=-1) is right.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        e = np.exp(Z - np.max(Z, axis=self.dim, keepdims=True))
        self.A = e / np.sum(e, axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        inner = np.sum(dLdA * self.A, axis=-1, keepdims=True)
        return self.A * (dLdA - inner)
