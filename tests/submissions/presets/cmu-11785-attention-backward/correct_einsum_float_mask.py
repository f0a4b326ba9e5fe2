# expect:
# einsum throughout; the mask applied as scores * (1 - mask) - eps * mask.
import numpy as np


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        Z = Z - np.max(Z, axis=self.dim, keepdims=True)
        self.A = np.exp(Z) / np.sum(np.exp(Z), axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        return self.A * dLdA - self.A * np.sum(self.A * dLdA, axis=self.dim, keepdims=True)


class ScaledDotProductAttention:
    def __init__(self):
        self.eps = 1e10
        self.softmax = Softmax(dim=3)

    def forward(self, Q, K, V, mask=None):
        self.Q, self.K, self.V = Q, K, V
        d_k = Q.shape[-1]
        scores = np.einsum("nhle,nhse->nhls", Q, K) / np.sqrt(d_k)
        if mask is not None:
            m = mask.astype(scores.dtype)
            scores = scores * (1 - m) - self.eps * m
        self.attention_scores = self.softmax.forward(scores)
        return np.einsum("nhls,nhsv->nhlv", self.attention_scores, V)

    def backward(self, d_output):
        P = self.attention_scores
        d_V = np.einsum("nhls,nhlv->nhsv", P, d_output)
        d_P = np.einsum("nhlv,nhsv->nhls", d_output, self.V)
        d_S = self.softmax.backward(d_P) / np.sqrt(self.Q.shape[-1])
        d_Q = np.einsum("nhls,nhse->nhle", d_S, self.K)
        d_K = np.einsum("nhls,nhle->nhse", d_S, self.Q)
        return d_Q, d_K, d_V
