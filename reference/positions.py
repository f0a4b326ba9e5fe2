"""Reference position information (SPEC section 1, "The rest of the attention unit": assignments
``positional_encoding`` and ``rope``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]


def positional_encoding(n_positions: int, d_model: int) -> Array:
    """The sinusoidal encoding: PE[p, 2i] = sin(p / 10000**(2i/d)), PE[p, 2i+1] = cos(same)."""
    position = np.arange(n_positions, dtype=np.float64)[:, None]
    pair = np.arange(d_model) // 2
    angle = position / 10000.0 ** (2 * pair / d_model)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))


def rope(x: ArrayLike, positions: ArrayLike | None = None, theta: float = 10000.0) -> Array:
    """Rotary position embedding: features (2i, 2i+1) of the token at position p rotated by the
    angle p * theta**(-2i/d)."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape[-2], x.shape[-1]
    p = np.arange(n) if positions is None else np.asarray(positions)
    angle = p.astype(np.float64)[:, None] * float(theta) ** (-2 * np.arange(d // 2) / d)
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
