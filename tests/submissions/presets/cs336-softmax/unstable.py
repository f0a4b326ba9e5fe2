# expect: unstable-softmax
import torch


def softmax(in_features, dim):
    exps = torch.exp(in_features)
    return exps / exps.sum(dim=dim, keepdim=True)
# where: unstable-softmax=6
