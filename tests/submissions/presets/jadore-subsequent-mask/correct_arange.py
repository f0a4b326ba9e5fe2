# expect:
import torch


def get_subsequent_mask(seq):
    """Position j is visible from position i when j <= i."""
    positions = torch.arange(seq.size(-1), device=seq.device)
    return (positions[None, :] <= positions[:, None]).unsqueeze(0)
