"""The ``softmax_backward`` task: the vector-Jacobian product of a softmax along any axis (SPEC
section 1, "The backward pass"), and its pipeline.

It shares the softmax-Jacobian knobs of ``reference.tasks.attention_backward`` (``dsoftmax``,
``rowsum_weight``, ``rowsum_axis``); its own are where the row sum runs when it is not the given
axis (``rowsum_axis``: ``last``, ``first``, ``before``, or ``moved_not_back``: the axis moved to
the end, the rows processed and the result reshaped back without moving it back) and what the
Jacobian is built from (``softmax_input``: the given probabilities, or ``logits``: softmax
applied to them again).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import Array, Recipe, Stages, choice, knobs
from reference.tasks.attention_backward import softmax_grad
from reference.tasks.softmax import softmax

OWN = knobs(softmax_input="probabilities")


def softmax_backward(grad_output: ArrayLike, output: ArrayLike, axis: int = -1
                     ) -> NDArray[np.float64]:
    """dL/dx = Y * (dY - sum(dY * Y, axis, keepdims=True)) for Y = softmax(x) along ``axis``."""
    d_y = np.asarray(grad_output, dtype=np.float64)
    y = np.asarray(output, dtype=np.float64)
    return y * (d_y - np.sum(d_y * y, axis=axis, keepdims=True))


def reference(grad_output: ArrayLike, output: ArrayLike, axis: int = -1
              ) -> tuple[NDArray[np.float64]]:
    """The task's outputs: (dx,)."""
    return (softmax_backward(grad_output, output, axis),)


def _fixed_axis(where: str, axis: int, ndim: int) -> int:
    """The axis a wrong choice of ``rowsum_axis`` sums over instead of ``axis``."""
    given = axis % ndim
    return {"last": ndim - 1, "first": 0, "before": given - 1}[where]


def pipeline(recipe: Recipe, grad_output: Array, output: Array, axis: int = -1,
             record: Stages | None = None) -> tuple[Array]:
    """The ``softmax_backward`` task under ``recipe``: (dx,)."""
    stages: Stages = {} if record is None else record
    with np.errstate(all="ignore"):
        y = output
        if choice(recipe, "softmax_input") == "logits":
            y = softmax(output, axis)
        stages["probabilities"] = y
        where = choice(recipe, "rowsum_axis")
        if where == "moved_not_back":
            moved = softmax_grad(recipe, np.moveaxis(y, axis, -1),
                                 np.moveaxis(grad_output, axis, -1), -1, stages)
            result = stages["dS"] = moved.reshape(y.shape)
            return (result,)
        if where in ("last", "first", "before"):
            fixed = _fixed_axis(where, axis, y.ndim)
            if fixed < 0:
                raise ValueError("no axis before the first")
            result = softmax_grad({**recipe, "rowsum_axis": "softmax"}, y, grad_output, fixed,
                                  stages)
        else:
            result = softmax_grad(recipe, y, grad_output, axis, stages)
        stages["dS"] = result
        return (result,)
