"""Stage 3: the probes each task is called on, deterministic from a seed; here what every
task's probe builder (``grader/tasks/<task>.py``) shares: the seeded maker of values, and the
inputs that several tasks build alike.

Shapes are fixed and chosen so that the coincidences that hide bugs are broken (n != m,
d_k != d_v, m != d_k, batch != heads, and every candidate divisor distinct), plus a few
deliberate coincidence probes on which an otherwise-crashing buggy variant runs (SHARED DOMAIN.md
section 5). Values come from the seed: a hidden seed gives new values with the same structure.
Regular probes use one-decimal values, so the smallest probe can be pasted exactly as evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from grader.model import Array, Probe

STABILITY_OFFSET = 1.0e4


UNDERFLOW_OFFSETS = (0.0, -1500.0, -3000.0)

#: probes that diagnosis uses and scoring does not count: they are there so that a course whose
#: interface can express only some kinds of input is diagnosed as strictly as the others; a
#: masked one is scored where the interface can express no other masked probe (valid lengths)
DIAGNOSIS_ONLY = "diagnosis-only"
#: a probe's tag ``stands-in:ID``: it runs only where probe ID cannot (the same concept check,
#: with an argument that interface needs: a theta where RoPE is always on), and its outcome is
#: read as that probe's
STANDS_IN = "stands-in:"
#: a probe whose inputs are built for its own tile sizes (keys lifted tile by tile): where a
#: course's code fixes other tile sizes inside, it cannot be run (a stand-in sized for those
#: tiles runs instead), as a concept probe that compares tile sizes cannot
TILE_SIZED = "tile-sized"


def stands_in_for(probe: Probe) -> str | None:
    """The probe this one stands in for, or None."""
    return next((t.removeprefix(STANDS_IN) for t in probe.tags if t.startswith(STANDS_IN)), None)


def scored_only(probes: Sequence[Probe], *aligned: Sequence[Any]) -> tuple[list[Any], ...]:
    """``probes`` and each list ``aligned`` with them (their outcomes, their references), kept
    only where the probe counts for the score (not where it is there for diagnosis only)."""
    scored = [i for i, p in enumerate(probes) if DIAGNOSIS_ONLY not in p.tags]
    return tuple([values[i] for i in scored] for values in (probes, *aligned))


class Maker:
    def __init__(self, seed: int, assignment: str) -> None:
        salt = sum(ord(c) for c in assignment)
        self.rng = np.random.default_rng([seed, salt])

    def grid(self, *shape: int) -> Array:
        """Values in [-2, 2] with one decimal: exact when printed, rarely tied."""
        return self.rng.integers(-20, 21, size=shape) / 10.0

    def integers(self, *shape: int) -> Array:
        return self.rng.integers(-2, 3, size=shape).astype(np.float64)

    def mask(self, *shape: int) -> Array:
        """A boolean mask in which every row and every column has both an allowed and a blocked key.

        So no variant (inverted, transposed, over queries) meets a fully masked row or column.
        """
        *batch, n, m = shape
        while True:
            mask = self.rng.random(shape) < 0.6
            rows_ok = mask.any(-1).all() and (~mask).any(-1).all()
            cols_ok = mask.any(-2).all() and (~mask).any(-2).all()
            square_ok = n != m or not np.array_equal(mask, np.swapaxes(mask, -1, -2))
            if rows_ok and cols_ok and square_ok:
                return mask

    def padding_mask(self, n: int, m: int) -> Array:
        """A mask whose last key is blocked for every query (a padded position)."""
        mask = self.mask(n, m - 1)
        return np.concatenate([mask, np.zeros((n, 1), dtype=bool)], axis=1)

    def prefix_mask(self, *shape: int) -> Array:
        """Each query may attend to a prefix of the keys (what valid lengths can say), of
        lengths that differ, never all nor none of them: no query is fully blocked, even with
        the mask inverted (the last key is then blocked for every query: probes with such a
        mask carry the tag ``prefix``, which the catalogue's rows that would meet 0/0 there
        skip)."""
        *lead, n, m = shape
        while True:
            lengths = self.rng.integers(1, m, size=(*lead, n, 1))
            if (lengths.min(axis=-2) < lengths.max(axis=-2)).all():
                return np.arange(m) < lengths

    def permutation(self, n: int) -> Array:
        while True:
            perm = self.rng.permutation(n)
            if not np.array_equal(perm, np.arange(n)):
                return perm


def new_probe(pid: str, args: tuple[object, ...], *tags: str, bank: tuple[str, ...] = (),
              repeat: bool = False, traced: bool = False, **meta: object) -> Probe:
    """A probe: its ID, arguments, tags, question-bank items and what it is for."""
    return Probe(pid, tuple(args), frozenset(tags), bank, repeat, meta, traced)


def offset_scores(make: Maker, n: int, m: int, d_k: int, offsets: Array) -> tuple[Array, Array]:
    """Q, K whose scores Q K^T / sqrt(d_k) are moderate plus a per-row offset.

    Every key has the constant feature 1 in its last column and query i carries
    offsets[i] * sqrt(d_k) there, so the correct softmax (shift-invariant) is unaffected.
    """
    q = make.grid(n, d_k)
    k = make.grid(m, d_k)
    k[:, -1] = 1.0
    q[:, -1] = offsets * np.sqrt(d_k)
    return q, k


def projection_weights(make: Maker, d_model: int = 12) -> tuple[Array, Array, Array, Array]:
    """Four (d_model, d_model) projections (W_q, W_k, W_v, W_o) of moderate size, two decimals."""
    scale = 1 / np.sqrt(d_model)
    return tuple(np.round(make.rng.normal(0, 1, (d_model, d_model)) * scale * 1.6, 2)
                 for _ in range(4))
