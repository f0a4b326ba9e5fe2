# expect:
import numpy as np


def softmax(x, axis=-1):
    """float32 and an explicit loop over every slice along the axis."""
    x = np.asarray(x, dtype=np.float32)
    out = np.empty_like(x)
    moved_in = np.moveaxis(x, axis, -1)
    moved_out = np.moveaxis(out, axis, -1)
    for index in np.ndindex(moved_in.shape[:-1]):
        row = moved_in[index]
        e = np.exp(row - row.max())
        moved_out[index] = e / e.sum()
    return out
