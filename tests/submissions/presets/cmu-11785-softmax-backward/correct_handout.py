# expect:
# mytorch/nn/activation.py as the handout's comments lead: the axis moved to the end, rows
# flattened, a Jacobian per row with einsum, then reshaped and moved back.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        if self.dim > len(Z.shape) or self.dim < -len(Z.shape):
            raise ValueError("Dimension to apply softmax to is greater than the number of dimensions in Z")
        self.A = np.exp(Z - np.max(Z, axis=self.dim, keepdims=True))
        self.A /= np.sum(self.A, axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        shape = self.A.shape
        C = shape[self.dim]
        A = np.moveaxis(self.A, self.dim, -1)
        dLdA = np.moveaxis(dLdA, self.dim, -1)
        moved = A.shape
        A = A.reshape(-1, C)
        dLdA = dLdA.reshape(-1, C)
        J = np.einsum("ij,jk->ijk", A, np.eye(C)) - np.einsum("ij,ik->ijk", A, A)
        dLdZ = np.einsum("ij,ijk->ik", dLdA, J)
        return np.moveaxis(dLdZ.reshape(moved), -1, self.dim)
