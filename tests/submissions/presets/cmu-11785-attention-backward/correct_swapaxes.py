# expect:
# The row-sum form of the softmax gradient, swapaxes for the transposes, np.where for the mask.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        shifted = Z - Z.max(axis=self.dim, keepdims=True)
        e = np.exp(shifted)
        self.A = e / e.sum(axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        inner = np.sum(dLdA * self.A, axis=self.dim, keepdims=True)
        return self.A * (dLdA - inner)


class ScaledDotProductAttention:
    def __init__(self):
        self.eps = 1e10  # DO NOT MODIFY
        self.softmax = Softmax(dim=-1)

    def forward(self, Q, K, V, mask=None):
        self.Q, self.K, self.V = Q, K, V
        scale = 1.0 / np.sqrt(Q.shape[-1])
        scores = np.matmul(Q, np.swapaxes(K, -1, -2)) * scale
        if mask is not None:
            scores = np.where(mask, -self.eps, scores)
        self.P = self.softmax.forward(scores)
        self.scale = scale
        return np.matmul(self.P, V)

    def backward(self, d_output):
        d_V = np.matmul(np.swapaxes(self.P, -1, -2), d_output)
        d_P = np.matmul(d_output, np.swapaxes(self.V, -1, -2))
        d_S = self.softmax.backward(d_P) * self.scale
        d_Q = np.matmul(d_S, self.K)
        d_K = np.matmul(np.swapaxes(d_S, -1, -2), self.Q)
        return d_Q, d_K, d_V
