"""The ``causal_mask`` task (SPEC section 1, "The rest of the attention unit"), and its
pipeline; its knobs (which keys a query keeps) serve causal self-attention too."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reference.stages import Array, Recipe, Stages, choice, knobs

CORRECT = knobs(mask_direction="past", mask_diagonal="self", mask_align="bottom_right",
                mask_polarity="keep")

#: how far past its own position a query sees: blocks-self one less, sees-next one more
_DIAGONAL_SHIFT = {"self": 0, "blocks_self": -1, "sees_next": 1}


def causal_mask(n: int, m: int | None = None) -> NDArray[np.bool_]:
    """(n, m) keep-mask: the n queries are the last n of m positions, so query i (at position
    m - n + i) may attend to every key j <= m - n + i."""
    m = n if m is None else m
    return np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)


def reference(n: int, m: int | None = None) -> tuple[NDArray[np.float64]]:
    """The task's outputs: (the mask as 1.0 where the query may attend, 0.0 elsewhere,)."""
    return (causal_mask(n, m).astype(np.float64),)


def causal_keep(recipe: Recipe, n: int, m: int) -> Array:
    """The (n, m) keep-mask the recipe builds (True: the query may attend to the key)."""
    offset = m - n if choice(recipe, "mask_align") == "bottom_right" else 0
    shift = _DIAGONAL_SHIFT[choice(recipe, "mask_diagonal")]
    position = np.arange(n)[:, None] + offset
    key = np.arange(m)[None, :]
    if choice(recipe, "mask_direction") == "past":
        keep = key <= position + shift
    else:
        keep = key >= position - shift
    return ~keep if choice(recipe, "mask_polarity") == "inverted" else keep


def _compared_positions(recipe: Recipe, n: int, m: int) -> dict[str, Array]:
    """The positions a mask built by comparison compares, as the recipe shifts them: the
    queries' (n, 1), the last key each may see, and the keys' (1, m). A diagonal one step off
    is written on one side or the other, so each side is a stage with the whole shift on it:
    the line that computed the shifted one is where the mistake enters."""
    offset = m - n if choice(recipe, "mask_align") == "bottom_right" else 0
    shift = _DIAGONAL_SHIFT[choice(recipe, "mask_diagonal")]
    return {"query_positions": (np.arange(n)[:, None] + offset + shift).astype(np.float64),
            "key_positions": (np.arange(m)[None, :] - shift).astype(np.float64)}


def pipeline(recipe: Recipe, n: int, m: int | None = None,
             record: Stages | None = None) -> tuple[Array]:
    """The ``causal_mask`` task under ``recipe``, as 1.0 (keep) and 0.0 (blocked)."""
    m = n if m is None else m
    keep = causal_keep(recipe, n, m).astype(np.float64)
    if record is not None:
        record.update(_compared_positions(recipe, n, m), output=keep)
    return (keep,)
