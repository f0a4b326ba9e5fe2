"""Reference softmax: numerically stable, along any axis."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def softmax(x: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    """Return exp(x) / sum(exp(x)) along ``axis``, computed after subtracting each slice's max."""
    values = np.asarray(x, dtype=np.float64)
    shifted = values - np.max(values, axis=axis, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=axis, keepdims=True)
