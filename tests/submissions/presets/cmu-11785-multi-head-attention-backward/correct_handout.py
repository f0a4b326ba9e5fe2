# expect:
# mytorch's Linear, Softmax, ScaledDotProductAttention and MultiHeadAttention filled in as the
# handout's comments lead: heads split by reshape and transpose, masks merged by logical_or.
import numpy as np


class Linear:
    def __init__(self, in_features, out_features):
        self.W = np.zeros((out_features, in_features))
        self.b = np.zeros(out_features)

    def init_weights(self, W, b):
        self.W = W
        self.b = b

    def forward(self, A):
        self.A = A
        self.input_shape = A.shape
        A_2d = A.reshape(-1, A.shape[-1])
        Z = A_2d @ self.W.T + self.b
        return Z.reshape(*self.input_shape[:-1], -1)

    def backward(self, dLdZ):
        dLdZ_2d = dLdZ.reshape(-1, dLdZ.shape[-1])
        A_2d = self.A.reshape(-1, self.A.shape[-1])
        self.dLdA = (dLdZ_2d @ self.W).reshape(*self.input_shape)
        self.dLdW = dLdZ_2d.T @ A_2d
        self.dLdb = dLdZ_2d.sum(axis=0)
        return self.dLdA


class Softmax:
    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, Z):
        self.A = np.exp(Z - np.max(Z, axis=self.dim, keepdims=True))
        self.A /= np.sum(self.A, axis=self.dim, keepdims=True)
        return self.A

    def backward(self, dLdA):
        total = np.sum(dLdA * self.A, axis=self.dim, keepdims=True)
        return self.A * (dLdA - total)


class ScaledDotProductAttention:
    def __init__(self):
        self.softmax = Softmax(dim=-1)
        self.eps = 1e10

    def forward(self, Q, K, V, mask=None):
        self.Q, self.K, self.V = Q, K, V
        self.E = Q.shape[-1]
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.E)
        if mask is not None:
            scores = scores + np.where(mask, -self.eps, 0)
        self.attention_scores = self.softmax.forward(scores)
        return self.attention_scores @ V

    def backward(self, d_output):
        d_V = np.swapaxes(self.attention_scores, -1, -2) @ d_output
        d_weights = d_output @ np.swapaxes(self.V, -1, -2)
        d_scores = self.softmax.backward(d_weights) / np.sqrt(self.E)
        d_Q = d_scores @ self.K
        d_K = np.swapaxes(d_scores, -1, -2) @ self.Q
        return d_Q, d_K, d_V


class MultiHeadAttention:
    def __init__(self, embed_dim, num_heads):
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.attention = ScaledDotProductAttention()
        self.q_proj = Linear(embed_dim, embed_dim)
        self.k_proj = Linear(embed_dim, embed_dim)
        self.v_proj = Linear(embed_dim, embed_dim)
        self.out_proj = Linear(embed_dim, embed_dim)

    def init_weights(self, Wq, bq, Wk, bk, Wv, bv, Wo, bo):
        self.q_proj.init_weights(Wq, bq)
        self.k_proj.init_weights(Wk, bk)
        self.v_proj.init_weights(Wv, bv)
        self.out_proj.init_weights(Wo, bo)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None):
        self.N, self.L, self.E = query.shape
        self.S = key.shape[1]
        q = self._split_heads(self.q_proj.forward(query))
        k = self._split_heads(self.k_proj.forward(key))
        v = self._split_heads(self.v_proj.forward(value))
        mask = self._merge_masks(key_padding_mask, attn_mask)
        attn_outputs = self.attention.forward(q, k, v, mask=mask)
        return self.out_proj.forward(self._concat_heads(attn_outputs))

    def backward(self, d_output):
        d_attn_output = self.out_proj.backward(d_output)
        d_q, d_k, d_v = self.attention.backward(self._split_heads(d_attn_output))
        d_query = self.q_proj.backward(self._concat_heads(d_q))
        d_key = self.k_proj.backward(self._concat_heads(d_k))
        d_value = self.v_proj.backward(self._concat_heads(d_v))
        return d_query, d_key, d_value

    def _merge_masks(self, key_padding_mask, attn_mask):
        N, S = key_padding_mask.shape
        L = attn_mask.shape[0]
        H = self.num_heads
        key_mask = np.broadcast_to(key_padding_mask[:, None, None, :], (N, H, L, S))
        attention_mask = np.broadcast_to(attn_mask[None, None, :, :], (N, H, L, S))
        return np.logical_or(key_mask, attention_mask)

    def _split_heads(self, x):
        x = x.reshape(x.shape[0], x.shape[1], self.num_heads, -1)
        return x.transpose(0, 2, 1, 3)

    def _concat_heads(self, x):
        x = x.transpose(0, 2, 1, 3)
        return x.reshape(x.shape[0], x.shape[1], -1)
