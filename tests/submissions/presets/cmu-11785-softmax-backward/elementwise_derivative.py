# expect: softmax-backward-elementwise
# The derivative of each output taken as if softmax acted on each entry alone.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        e = np.exp(Z - np.max(Z, axis=self.dim, keepdims=True))
        self.A = e / np.sum(e, axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        return dLdA * self.A * (1 - self.A)
