"""Stage 4a (pure): compare one array with another, the way torch.testing and numpy.testing do.

Order: shape first, then where NaN and inf are, then values. Tolerances come from one table keyed
by the dtype the submission returned (a float32 result is judged with float32 tolerances, SPEC
section 1), widened on probes with large logits by the rounding error those logits carry.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from grader.model import Array

#: dtype name -> (rtol, atol); atol is relative to the size of the expected values (at least 1)
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-5, 1e-6),
    "float32": (1e-4, 1e-5),
}
#: nothing coarser than float32 widens the tolerances a score is judged with (SPEC): a float16
#: answer is judged as float32, and the report says that precision was lost. Diagnosis, which
#: asks which computation the answer comes from, reads it at its own precision.
JUDGED_AS = {"float16": "float32"}
#: diagnosis of a float16 answer: the rounding of the answer itself (2**-11 relative) on top of
#: float32's tolerances (the answer is computed, then rounded, the way such submissions do)
ROUNDING_ONLY = {"float16": 2e-3}
#: typical |score| on ordinary probes, and on the large-logit stability probes
ORDINARY_LOGITS = 20.0
LARGE_LOGITS = 1.0e4
#: a variant is claimed only if the reference misses by at least this many tolerances
FAR = 50.0
#: a mismatch within this many tolerances is a near miss: its message says what margin was
#: allowed (beyond it, the margin says nothing the student can use)
NEAR_MISS = 100.0


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


def tolerance_for(actual: Array, expected: Array, large_logits: bool = False, *,
                  judging: bool = True) -> Tolerance:
    """The tolerance for ``actual`` (by its dtype); ``judging=False`` (diagnosis) also allows
    the rounding of an answer returned less precise than float32."""
    dtype = _dtype_name(actual.dtype)
    if not judging and dtype in ROUNDING_ONLY:
        base = tolerance_for(actual.astype(JUDGED_AS[dtype]), expected, large_logits)
        extra = ROUNDING_ONLY[dtype]
        return Tolerance(base.rtol + extra, base.atol + extra)
    name = JUDGED_AS.get(dtype, dtype)
    name = name if name in TOLERANCES else "float64"
    rtol, atol = TOLERANCES[name]
    logits = LARGE_LOGITS if large_logits else ORDINARY_LOGITS
    # Rounding a logit of size L costs eps * L in every weight; that error reaches each output
    # as a fraction of the values' size, not of the output element itself (which may be a small
    # difference of large terms, as after W_o), so it widens atol as well as rtol.
    widening = 8 * _EPS[name] * logits
    return Tolerance(rtol + widening, (atol + widening) * _magnitude(expected))


@functools.lru_cache(maxsize=64)
def _dtype_name(dtype: np.dtype) -> str:  # (numpy works the name out anew each time)
    return dtype.name


_EPS = {name: float(np.finfo(name).eps) for name in TOLERANCES}


def _magnitude(expected: Array) -> float:
    """The size of the expected values: their largest finite |value|, at least 1."""
    if not expected.size:
        return 1.0
    peak = float(np.abs(expected).max())  # (array methods: numpy's function wrappers cost more)
    if not np.isfinite(peak):  # (rare: only then are the finite values picked out)
        finite = expected[np.isfinite(expected)]
        peak = float(np.max(np.abs(finite))) if finite.size else 1.0
    return max(1.0, peak)


def error_ratio(actual: Array, expected: Array, tol: Tolerance) -> float:
    """Largest |actual - expected| in units of the allowed tolerance; inf if shapes or NaN/inf
    positions differ. At most 1 means close."""
    if actual.shape != expected.shape:
        return float("inf")
    actual = actual.astype(np.float64, copy=False)
    if actual.size:
        with np.errstate(all="ignore"):
            ratio = float((np.abs(actual - expected)
                           / (tol.atol + tol.rtol * np.abs(expected))).max())
        if np.isfinite(ratio):  # both wholly finite (the usual case): that is the answer
            return ratio
    finite_a, finite_e = np.isfinite(actual), np.isfinite(expected)
    if not np.array_equal(finite_a, finite_e):
        return float("inf")
    special = ~finite_e
    if special.any() and not np.array_equal(actual[special], expected[special], equal_nan=True):
        return float("inf")
    if not finite_e.any():
        return 0.0
    with np.errstate(all="ignore"):
        allowed = tol.atol + tol.rtol * np.abs(expected[finite_e])
        return float(np.max(np.abs(actual[finite_e] - expected[finite_e]) / allowed))


def gap(actual: Array, expected: Array) -> Array:
    """|actual - expected| element by element, for same-shaped arrays: 0 where they are equal
    (the same inf, or both NaN), inf where only one of them is finite."""
    with np.errstate(all="ignore"):
        difference = np.abs(actual - expected)
    equal = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    return np.where(equal, 0.0, np.where(np.isfinite(difference), difference, np.inf))


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _index(flat: int, shape: tuple[int, ...]) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat, shape))) if shape else "()"


def mismatch_message(actual: Array, expected: Array, tol: Tolerance, what: str = "output") -> str:
    """Why ``actual`` is not close to ``expected``, with the numbers; empty when it is."""
    if actual.shape != expected.shape:
        return f"{what} shape {tuple(actual.shape)} does not match the expected {tuple(expected.shape)}."
    actual = actual.astype(np.float64, copy=False)
    with np.errstate(all="ignore"):
        diff = np.abs(actual - expected)
        allowed = tol.atol + tol.rtol * np.abs(expected)
        within = diff <= allowed
    if within.all():  # (the usual case: a NaN or an inf where a finite value is due is not)
        return ""
    nonfinite = ~np.isfinite(actual) & np.isfinite(expected)
    if nonfinite.any():
        first = int(np.flatnonzero(nonfinite)[0])
        return (f"{what} has {int(nonfinite.sum())} NaN/inf value(s) where finite values are "
                f"expected (first at index {_index(first, actual.shape)}: "
                f"{_fmt(actual.flat[first])}, expected {_fmt(expected.flat[first])}).")
    bad = ~within
    worst = int(np.nanargmax(np.where(bad, diff, -1.0)))
    # the margin matters only to a near miss (rounding, float32): far off, it is noise
    margin = (f" (a rounding margin of {_fmt(allowed.flat[worst])} is allowed)"
              if diff.flat[worst] <= NEAR_MISS * allowed.flat[worst] else "")
    return (f"{what}: {int(bad.sum())} / {bad.size} elements differ "
            f"({100 * bad.sum() / bad.size:.1f}%); greatest absolute difference "
            f"{_fmt(diff.flat[worst])} at index {_index(worst, actual.shape)}{margin}: "
            f"got {_fmt(actual.flat[worst])}, expected {_fmt(expected.flat[worst])}.")
