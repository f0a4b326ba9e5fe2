# expect: softmax-backward-wrong-axis
# The handout's moveaxis-and-reshape, but reshaped straight to the original shape without moving
# the axis back: right when dim is the last axis, and (with the course's all-ones upstream
# gradient, where the right answer is 0) on every axis the course's tests try.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        self.A = np.exp(Z - np.max(Z, axis=self.dim, keepdims=True))
        self.A /= np.sum(self.A, axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        shape = self.A.shape
        C = shape[self.dim]
        A = np.moveaxis(self.A, self.dim, -1).reshape(-1, C)
        G = np.moveaxis(dLdA, self.dim, -1).reshape(-1, C)
        J = np.einsum("ij,jk->ijk", A, np.eye(C)) - np.einsum("ij,ik->ijk", A, A)
        dLdZ = np.einsum("ij,ijk->ik", G, J)
        return dLdZ.reshape(shape)
