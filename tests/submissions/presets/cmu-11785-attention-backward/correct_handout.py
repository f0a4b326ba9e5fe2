# expect:
# mytorch/nn/activation.py and scaled_dot_product_attention.py filled in as the handout's
# comments lead: a Jacobian per row built with einsum after moving the axis to the end.
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
        A = np.moveaxis(self.A, self.dim, -1)
        dLdA = np.moveaxis(dLdA, self.dim, -1)
        moved_shape = A.shape
        A = A.reshape(-1, C)
        dLdA = dLdA.reshape(-1, C)
        diag_A = np.einsum("ij,jk->ijk", A, np.eye(C))
        outer_A = np.einsum("ij,ik->ijk", A, A)
        J = diag_A - outer_A
        dLdZ = np.einsum("ij,ijk->ik", dLdA, J)
        return np.moveaxis(dLdZ.reshape(moved_shape), -1, self.dim)


class ScaledDotProductAttention:
    def __init__(self):
        self.softmax = Softmax(dim=-1)
        self.eps = 1e10  # DO NOT MODIFY

    def forward(self, Q, K, V, mask=None):
        self.Q, self.K, self.V, self.mask = Q, K, V, mask
        self.E = Q.shape[-1]
        scaled_dot_product = Q @ np.transpose(K, (0, 1, 3, 2)) / np.sqrt(self.E)
        if self.mask is not None:
            scaled_dot_product = scaled_dot_product + np.where(self.mask, -self.eps, 0)
        self.attention_scores = self.softmax.forward(scaled_dot_product)
        return self.attention_scores @ V

    def backward(self, d_output):
        d_V = np.transpose(self.attention_scores, (0, 1, 3, 2)) @ d_output
        d_attention_scores = d_output @ np.transpose(self.V, (0, 1, 3, 2))
        d_scaled_dot_product = self.softmax.backward(d_attention_scores)
        d_scaled_dot_product = d_scaled_dot_product / np.sqrt(self.E)
        d_Q = d_scaled_dot_product @ self.K
        d_K = np.transpose(d_scaled_dot_product, (0, 1, 3, 2)) @ self.Q
        return d_Q, d_K, d_V
