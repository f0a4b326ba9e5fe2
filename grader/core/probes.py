"""Stage 3: the probes each assignment is called on, deterministic from a seed.

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


def _probe(pid: str, args: tuple[object, ...], *tags: str, bank: tuple[str, ...] = (),
           repeat: bool = False, traced: bool = False, **meta: object) -> Probe:
    return Probe(pid, tuple(args), frozenset(tags), bank, repeat, meta, traced)


def _offset_scores(make: Maker, n: int, m: int, d_k: int, offsets: Array) -> tuple[Array, Array]:
    """Q, K whose scores Q K^T / sqrt(d_k) are moderate plus a per-row offset.

    Every key has the constant feature 1 in its last column and query i carries
    offsets[i] * sqrt(d_k) there, so the correct softmax (shift-invariant) is unaffected.
    """
    q = make.grid(n, d_k)
    k = make.grid(m, d_k)
    k[:, -1] = 1.0
    q[:, -1] = offsets * np.sqrt(d_k)
    return q, k


# ----------------------------------------------------------------------------------- softmax


def softmax_probes(make: Maker) -> list[Probe]:
    matrix = make.grid(3, 4)
    big = make.grid(3, 4) + STABILITY_OFFSET + np.array([[0.0], [2.0], [-3.0]])
    spread = make.grid(3, 4) + np.array(UNDERFLOW_OFFSETS)[:, None]
    constant_row = make.grid(3, 4)
    constant_row[1] = 0.7
    return [
        _probe("vector", (make.grid(5),), "unbatched", bank=("B-2",)),
        _probe("matrix", (matrix,), "unbatched", bank=("B-2", "B-13"), repeat=True),
        _probe("matrix-axis0", (make.grid(3, 4), 0), "unbatched", "axis", bank=("B-2",),
               traced=True),
        _probe("tensor", (make.grid(2, 3, 4),), "batched", bank=("B-20",)),
        _probe("tensor-axis1", (make.grid(2, 3, 4), 1), "batched", "axis", bank=("B-20",),
               traced=True),
        _probe("tensor-axis0", (make.grid(2, 3, 4), 0), "batched", "axis", bank=("B-20",)),
        _probe("large-logits", (big,), "unbatched", "large", bank=("B-10", "A-edge-2")),
        _probe("far-apart-rows", (spread,), "unbatched", "large", bank=("B-10",)),
        _probe("shifted", (matrix + 100.0,), "unbatched", "concept", bank=("B-10",)),
        _probe("uniform-row", (constant_row,), "unbatched", "concept", bank=("A-edge-5", "B-24")),
        _probe("single-entry", (make.grid(3, 1),), "unbatched", "concept", bank=("B-26",)),
    ]


# ---------------------------------------------------------------------------------- attention


def attention_probes(make: Maker) -> list[Probe]:
    g = make.grid
    cross = (g(3, 6), g(7, 6), g(7, 2))
    perm_q, perm_kv = make.permutation(3), make.permutation(7)
    stable_q, stable_k = _offset_scores(
        make, 3, 5, 4, STABILITY_OFFSET + np.array([0.0, 2.0, -3.0])
    )
    spread_q, spread_k = _offset_scores(make, 3, 5, 4, np.array(UNDERFLOW_OFFSETS))
    identical_keys = np.repeat(g(1, 4), 5, axis=0)
    zero_query = g(3, 4)
    zero_query[1] = 0.0
    twin_queries = g(3, 4)
    twin_queries[2] = twin_queries[0]
    aligned_q, aligned_k = g(2, 4), g(5, 4)
    aligned_k[3] = np.array([6.0, 6.0, 6.0, 6.0])
    aligned_q[:] = np.array([2.0, 2.0, 2.0, 2.0])
    padding_mask = make.padding_mask(3, 5)
    pad_q, pad_k, pad_v = g(3, 4), g(5, 4), g(5, 3)
    pad_k2, pad_v2 = pad_k.copy(), pad_v.copy()
    pad_k2[-1], pad_v2[-1] = g(4) + 1.0, g(3) - 1.0
    basic = (g(2, 4), g(5, 4), g(5, 3))
    return [
        _probe("basic", basic, "unbatched", bank=("B-6", "B-12"), repeat=True, traced=True),
        _probe("cross", cross, "unbatched", bank=("B-6", "B-12", "B-22")),
        _probe("batched", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3)), "batched", bank=("B-20",)),
        _probe("batched-heads", (g(2, 3, 2, 5), g(2, 3, 4, 5), g(2, 3, 4, 2)), "batched",
               bank=("B-20",)),
        _probe("masked", (g(3, 4), g(5, 4), g(5, 3), make.mask(3, 5)), "unbatched", "masked",
               bank=("A-edge-6", "B-30"), traced=True),
        _probe("masked-batched", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3), make.mask(2, 3, 5)),
               "batched", "masked", bank=("A-edge-6", "B-20")),
        _probe("masked-broadcast", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3), make.mask(3, 5)),
               "batched", "masked", bank=("A-edge-6", "B-20")),
        _probe("square-masked", (g(4, 3), g(4, 3), g(4, 2), make.mask(4, 4)), "unbatched",
               "masked", "coincidence", bank=("A-edge-6", "B-14"), traced=True),
        _probe("square", (g(4, 3), g(4, 3), g(4, 2)), "unbatched", "coincidence",
               bank=("B-12", "B-14")),
        _probe("square-keys", (g(3, 4), g(4, 4), g(4, 2)), "unbatched", "coincidence",
               bank=("A-err-2", "B-12")),
        _probe("square-keys-masked", (g(3, 4), g(4, 4), g(4, 2), make.mask(3, 4)), "unbatched",
               "masked", "coincidence", bank=("A-err-2", "B-12"), traced=True),
        _probe("square-batched", (g(2, 4, 4), g(2, 4, 4), g(2, 4, 3)), "batched", "coincidence",
               bank=("B-12", "B-14")),
        _probe("integer-valued", (make.integers(3, 2), make.integers(4, 2), make.integers(4, 3),
                                  make.mask(3, 4)), "unbatched", "masked"),
        _probe("large-logits", (stable_q, stable_k, g(5, 3)), "unbatched", "large",
               bank=("B-10", "A-edge-2")),
        _probe("far-apart-rows", (spread_q, spread_k, g(5, 3)), "unbatched", "large",
               bank=("B-10",)),
        _probe("weights", (g(3, 4), g(5, 4), np.eye(5)), "unbatched", "concept",
               bank=("A-tf-2", "B-2", "A-tf-5", "B-1")),
        _probe("weights-masked", (g(3, 4), g(5, 4), np.eye(5), make.mask(3, 5)), "unbatched",
               "masked", "concept", bank=("A-edge-6", "B-30")),
        _probe("permuted", (cross[0][perm_q], cross[1][perm_kv], cross[2][perm_kv]),
               "unbatched", "concept", bank=("A-tf-4", "B-23"), source="cross",
               query_order=perm_q),
        _probe("identical-keys", (g(3, 4), identical_keys, g(5, 3)), "unbatched", "concept",
               bank=("A-edge-1", "B-3", "B-24")),
        _probe("single-key", (g(3, 4), g(1, 4), g(1, 3)), "unbatched", "concept",
               bank=("A-edge-3", "B-26")),
        _probe("zero-query", (zero_query, g(5, 4), g(5, 3)), "unbatched", "concept",
               bank=("B-28", "A-edge-5")),
        _probe("identical-queries", (twin_queries, g(5, 4), g(5, 3)), "unbatched", "concept",
               bank=("B-29", "A-edge-4")),
        _probe("one-large-score", (aligned_q, aligned_k, g(5, 3)), "unbatched", "concept",
               bank=("A-edge-2", "B-10")),
        _probe("padding", (pad_q, pad_k, pad_v, padding_mask), "unbatched", "masked", "concept",
               "no-diagnosis", bank=("A-edge-6", "B-30")),
        _probe("padding-changed", (pad_q, pad_k2, pad_v2, padding_mask), "unbatched", "masked",
               "concept", "no-diagnosis", bank=("A-edge-6", "B-30")),
        # diagnosis only (never scored): masks that valid lengths can say, for courses whose
        # interface takes lengths rather than a mask
        _probe("prefix-masked", (g(3, 4), g(5, 4), g(5, 3), make.prefix_mask(3, 5)), "unbatched",
               "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-30")),
        _probe("prefix-masked-batched", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3),
                                         make.prefix_mask(2, 3, 5)),
               "batched", "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-20")),
    ]


# ------------------------------------------------------------------------ multi-head attention


def _weights(make: Maker, d_model: int = 12) -> tuple[Array, Array, Array, Array]:
    scale = 1 / np.sqrt(d_model)
    return tuple(np.round(make.rng.normal(0, 1, (d_model, d_model)) * scale * 1.6, 2)
                 for _ in range(4))


def multi_head_probes(make: Maker) -> list[Probe]:
    g = make.grid
    w = _weights(make)
    eye = np.eye(12)
    x_self = g(4, 12)
    cross = (g(3, 12), g(5, 12))
    perm_q, perm_kv = make.permutation(3), make.permutation(5)
    twin = g(3, 12)
    twin[2] = twin[0]

    def offsets_pair(offsets: Array) -> tuple[Array, Array]:
        # identity W_q, W_k: per head (6 features each) the last feature carries the offset
        x_q, x_kv = g(3, 12) * 0.5, g(5, 12) * 0.5
        for head in range(2):
            x_kv[:, 6 * head + 5] = 1.0
            x_q[:, 6 * head + 5] = offsets * np.sqrt(6)
        return x_q, x_kv

    stable = offsets_pair(STABILITY_OFFSET + np.array([0.0, 2.0, -3.0]))
    spread = offsets_pair(np.array(UNDERFLOW_OFFSETS))
    padding_mask = make.padding_mask(3, 5)
    pad_q, pad_kv = g(3, 12), g(5, 12)
    pad_kv2 = pad_kv.copy()
    pad_kv2[-1] = g(12) + 1.0
    return [
        _probe("self", (x_self, x_self, *w, 2), "unbatched", bank=("A-tf-7",), repeat=True),
        _probe("cross", (*cross, *w, 2), "unbatched", bank=("B-22", "A-tf-7"), traced=True),
        _probe("cross-3-heads", (g(3, 12), g(5, 12), *w, 3), "unbatched", bank=("B-16",)),
        _probe("batched", (g(3, 4, 12), g(3, 5, 12), *w, 2), "batched", bank=("B-20",)),
        _probe("batched-2-dims", (g(2, 2, 3, 12), g(2, 2, 5, 12), *w, 3), "batched",
               bank=("B-20",)),
        _probe("masked", (g(4, 12), g(5, 12), *w, 2, make.mask(4, 5)), "unbatched", "masked",
               bank=("A-edge-6", "B-30"), traced=True),
        _probe("masked-batched", (g(3, 4, 12), g(3, 5, 12), *w, 2, make.mask(3, 4, 5)),
               "batched", "masked", bank=("A-edge-6", "B-20")),
        _probe("masked-batch-equals-heads", (g(2, 3, 12), g(2, 5, 12), *w, 2,
                                             make.mask(2, 3, 5)),
               "batched", "masked", "coincidence", bank=("A-edge-6",)),
        _probe("square-masked", (x_self, x_self, *w, 2, make.mask(4, 4)), "unbatched", "masked",
               "coincidence", bank=("A-edge-6", "B-14")),
        _probe("square", (g(4, 12), g(4, 12), *w, 2), "unbatched", "coincidence",
               bank=("B-12", "B-14")),
        _probe("square-keys", (g(3, 12), g(6, 12), *w, 2), "unbatched", "coincidence",
               bank=("A-err-2", "B-12")),
        _probe("square-keys-masked", (g(3, 12), g(6, 12), *w, 2, make.mask(3, 6)), "unbatched",
               "masked", "coincidence", bank=("A-err-2", "B-12")),
        _probe("square-batched", (g(2, 4, 12), g(2, 4, 12), *w, 3), "batched", "coincidence",
               bank=("B-12", "B-14")),
        _probe("large-logits", (*stable, eye, eye, w[2], w[3], 2), "unbatched", "large",
               bank=("B-10", "A-edge-2")),
        _probe("far-apart-rows", (*spread, eye, eye, w[2], w[3], 2), "unbatched", "large",
               bank=("B-10",)),
        _probe("per-head-scale", (g(3, 12), g(5, 12), eye, eye, eye, eye, 3), "unbatched",
               "concept", bank=("B-16", "A-err-7", "A-tf-9")),
        _probe("permuted", (cross[0][perm_q], cross[1][perm_kv], *w, 2), "unbatched", "concept",
               bank=("A-tf-4", "B-23"), source="cross", query_order=perm_q),
        _probe("identical-queries", (twin, g(5, 12), *w, 2), "unbatched", "concept",
               bank=("B-29", "A-edge-4")),
        _probe("padding", (pad_q, pad_kv, *w, 2, padding_mask), "unbatched", "masked",
               "concept", "no-diagnosis", bank=("A-edge-6", "B-30")),
        _probe("padding-changed", (pad_q, pad_kv2, *w, 2, padding_mask), "unbatched",
               "masked", "concept", "no-diagnosis", bank=("A-edge-6", "B-30")),
        # diagnosis only (never scored): enough self-attention and valid-length inputs that a
        # course restricted to them is diagnosed as strictly as the rest
        _probe("self-small", (*[g(3, 12)] * 2, *w, 2), "unbatched", "diagnosis-only",
               bank=("A-tf-7",)),
        _probe("self-3-heads", (*[g(5, 12)] * 2, *w, 3), "unbatched", "diagnosis-only",
               bank=("B-16",)),
        _probe("self-batched", (*[g(2, 4, 12)] * 2, *w, 2), "batched", "diagnosis-only",
               bank=("B-20",)),
        _probe("prefix-masked", (g(3, 12), g(5, 12), *w, 2, make.prefix_mask(3, 5)),
               "unbatched", "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-30")),
        _probe("prefix-masked-self", (x_self, x_self, *w, 2, make.prefix_mask(4, 4)),
               "unbatched", "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-30")),
    ]
