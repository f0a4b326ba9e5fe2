"""The ``rope`` task (SPEC section 1, "The rest of the attention unit"): rotary position
embedding, and its pipeline; its knobs serve causal self-attention's RoPE too."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import Array, Recipe, Stages, choice, knobs

CORRECT = knobs(rope_pairs="interleaved", rope_sign="forward", rope_frequency="pair",
                rope_positions="given", rope_partner="mixed")


def rope(x: ArrayLike, positions: ArrayLike | None = None, theta: float = 10000.0
         ) -> NDArray[np.float64]:
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


def reference(x: ArrayLike, positions: ArrayLike | None = None, theta: float = 10000.0
              ) -> tuple[NDArray[np.float64]]:
    """The task's outputs: (output,)."""
    return (rope(x, positions, theta),)


def halves_order(d: int) -> Array:
    """SPEC's features in the order of a (i, i + d/2) layout (see ``grader/sandbox/interface``):
    the pairs' first features, then their second ones."""
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def rotated(recipe: Recipe, x: Array, positions: Array | None = None, theta: float = 10000.0,
            record: Stages | None = None) -> Array:
    """``x`` rotated as the recipe says (the ``rope`` task's output; causal self-attention's
    RoPE)."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape[-2], x.shape[-1]
    if choice(recipe, "rope_pairs") == "interleaved_in_halves":
        # a course of (i, i + d/2) pairs is handed SPEC's features in that order: code that
        # rotates neighbours there pairs features of different SPEC pairs
        order = halves_order(d)
        inner = {**recipe, "rope_pairs": "interleaved"}
        turned = rotated(inner, x[..., order], positions, theta, record)
        return turned[..., np.argsort(order)]
    if positions is None or choice(recipe, "rope_positions") == "ignored":
        positions = np.arange(n)
    pair = np.arange(d // 2)
    exponent = (pair if choice(recipe, "rope_frequency") == "missing_two" else 2 * pair) / d
    with np.errstate(all="ignore"):
        frequency = float(theta) ** -exponent
        angle = np.asarray(positions, dtype=np.float64)[:, None] * frequency
    cos, sin = np.cos(angle), np.sin(angle)
    if record is not None:
        record.update(positions=np.asarray(positions, dtype=np.float64), frequencies=frequency,
                      angles=angle)
    if choice(recipe, "rope_sign") == "reversed":
        sin = -sin
    if record is not None:  # the unit complex numbers exp(i a) the pairs are multiplied by
        record["rotations"] = np.stack([cos, sin], axis=-1)
    pairs = choice(recipe, "rope_pairs")
    if record is not None:  # the (n, d) table of angles, doubled the way the layout reads it
        record["angle_table"] = (np.concatenate([angle, angle], axis=-1) if pairs == "halves"
                                 else np.repeat(angle, 2, axis=-1))
    partner = choice(recipe, "rope_partner")
    if pairs == "halves_partner" and partner == "mixed":
        # a table for neighbours (each angle twice in a row) with rotate-half's partner i + d/2
        half = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
        out = x * np.repeat(cos, 2, axis=-1) + half * np.repeat(sin, 2, axis=-1)
        if record is not None:
            record["output"] = out
        return out
    halves = pairs in ("halves", "halves_partner")
    first, second = (x[..., : d // 2], x[..., d // 2:]) if halves else (x[..., 0::2], x[..., 1::2])
    if partner == "mixed":
        new_first, new_second = first * cos - second * sin, first * sin + second * cos
    elif partner == "none_signed":  # x*cos - x*sin and x*cos + x*sin: signs in the sin table
        new_first, new_second = first * cos - first * sin, second * cos + second * sin
    else:  # "none": x*cos + x*sin everywhere
        new_first, new_second = first * cos + first * sin, second * cos + second * sin
    out = np.empty_like(x)
    if halves:
        out[..., : d // 2], out[..., d // 2:] = new_first, new_second
    else:
        out[..., 0::2], out[..., 1::2] = new_first, new_second
    if record is not None:
        record["output"] = out
    return out


def pipeline(recipe: Recipe, x: Array, positions: Array | None = None, theta: float = 10000.0,
             record: Stages | None = None) -> tuple[Array]:
    """The ``rope`` task under ``recipe``: (output,)."""
    return (rotated(recipe, x, positions, theta, record),)
