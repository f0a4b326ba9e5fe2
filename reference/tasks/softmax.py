"""The ``softmax`` task: a numerically stable softmax along any axis, and its pipeline."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import Array, Recipe, Stages, choice, knobs, normalize

CORRECT = knobs(axis="given")


def softmax(x: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    """Return exp(x) / sum(exp(x)) along ``axis``, computed after subtracting each slice's max."""
    values = np.asarray(x, dtype=np.float64)
    shifted = values - np.max(values, axis=axis, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / np.sum(exponentials, axis=axis, keepdims=True)


def reference(x: ArrayLike, axis: int = -1) -> tuple[NDArray[np.float64]]:
    """The task's outputs: (output,)."""
    return (softmax(x, axis),)


def pipeline(recipe: Recipe, x: Array, axis: int = -1,
             record: Stages | None = None) -> tuple[Array]:
    """The ``softmax`` task under ``recipe``: (output,)."""
    # "others": every axis but the given one, at once (code that takes a matrix of rows only,
    # ``ndim = 2``, and sums down its columns: the rows are every other axis folded into one)
    others = tuple(a for a in range(np.ndim(x)) if a != axis % max(1, np.ndim(x)))
    axes: dict[str, Any] = {"given": axis, "last": -1, "first": 0, "second": 1, "others": others}
    used_axis = axes[choice(recipe, "axis")]  # (an int, or a tuple NumPy takes as well)
    how = choice(recipe, "normalize")
    with np.errstate(all="ignore"):
        if how == "global":
            how = "global_all"
        output = normalize(how, x, used_axis, record)
        if record is not None:
            record["output"] = output
        return (output,)
