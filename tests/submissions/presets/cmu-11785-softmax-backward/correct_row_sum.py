# expect:
# The Jacobian never built: A * (dLdA - sum(dLdA * A)) along dim.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        shifted = Z - Z.max(axis=self.dim, keepdims=True)
        self.A = np.exp(shifted) / np.exp(shifted).sum(axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        weighted = (dLdA * self.A).sum(axis=self.dim, keepdims=True)
        return self.A * (dLdA - weighted)
