# expect: mask-zero-fill
# The mask applied as scores * (1 - mask) with the -eps term left out: the ignored scores become
# 0, not -1e10. The course's tests pass a mask that ignores nothing.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        e = np.exp(Z - np.max(Z, axis=self.dim, keepdims=True))
        self.A = e / np.sum(e, axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        return self.A * (dLdA - np.sum(dLdA * self.A, axis=self.dim, keepdims=True))


class ScaledDotProductAttention:
    def __init__(self):
        self.eps = 1e10  # DO NOT MODIFY
        self.softmax = Softmax(dim=-1)

    def forward(self, Q, K, V, mask=None):
        self.Q, self.K, self.V = Q, K, V
        self.E = Q.shape[-1]
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.E)
        if mask is not None:
            scores = scores * (1 - mask)
        self.attention_scores = self.softmax.forward(scores)
        return self.attention_scores @ V

    def backward(self, d_output):
        d_V = np.swapaxes(self.attention_scores, -1, -2) @ d_output
        d_P = d_output @ np.swapaxes(self.V, -1, -2)
        d_S = self.softmax.backward(d_P) / np.sqrt(self.E)
        return d_S @ self.K, np.swapaxes(d_S, -1, -2) @ self.Q, d_V
