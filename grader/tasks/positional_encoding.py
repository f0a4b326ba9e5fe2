"""The ``positional_encoding`` task (sinusoidal): its probes (several d_model, a long sequence),
its conceptual checks and how its evidence is told."""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.core.concepts import ATOL, Concept, Outcomes, Verdict, output_of
from grader.core.probes import Maker, new_probe
from grader.core.tasks import Recipe, Task
from grader.model import Probe
from grader.registry import Interface
from reference.tasks import positional_encoding


def make_probes(make: Maker) -> list[Probe]:
    d_small = int(make.rng.choice([6, 8]))
    return [
        new_probe("small", (4, d_small), "unbatched", bank=("A-why-6",), traced=True, repeat=True),
        new_probe("medium", (9, 16), "unbatched", bank=("A-why-6",)),
        new_probe("long", (int(make.rng.integers(40, 60)), 32), "unbatched",
                  bank=("A-why-6", "A-edge-4")),
        new_probe("wide", (12, 64), "unbatched", bank=("A-why-6",), traced=True),
        new_probe("one-position", (1, 10), "unbatched", bank=("A-err-4",)),
    ]


def _distinct_rows(r: Outcomes) -> Verdict:
    pe = output_of(r, "long")
    if pe.ndim != 2:
        return False, f"the encoding should be (n_positions, d_model); got shape {pe.shape}."
    gaps = np.abs(pe[:, None, :] - pe[None, :, :]).max(-1) + np.eye(len(pe))
    ok = bool(gaps.min() > 1e-6)
    return ok, ("every position gets its own encoding, so identical tokens at different "
                "positions differ." if ok else
                "two positions get the same encoding: identical tokens there would stay "
                "indistinguishable.")


def _bounded(r: Outcomes) -> Verdict:
    pe = output_of(r, "wide")
    ok = bool(np.all(np.abs(pe) <= 1 + ATOL))
    return ok, ("every value is a sine or cosine, in [-1, 1]." if ok else
                f"values must be sines and cosines, in [-1, 1]; yours reach {np.abs(pe).max():.4g}.")


def _shift_is_rotation(r: Outcomes) -> Verdict:
    """PE[p + k] is PE[p] turned pair by pair by an angle that depends on k alone."""
    pe = output_of(r, "long")
    if pe.ndim != 2 or pe.shape[1] % 2:
        return False, f"the encoding should be (n_positions, d_model); got shape {pe.shape}."
    pairs = pe.reshape(len(pe), -1, 2)
    k = 3
    first, later = pairs[:-k], pairs[k:]
    # for each pair, the 2x2 map taking rows p to rows p + k, fitted then checked on every p
    for i in range(pairs.shape[1]):  # (float32 answers are exact to about 1e-6 only)
        fitted, *_ = np.linalg.lstsq(first[:, i], later[:, i], rcond=None)
        rotation = np.allclose(fitted.T @ fitted, np.eye(2), atol=1e-4)
        if not rotation or not np.allclose(first[:, i] @ fitted, later[:, i], atol=1e-4):
            return False, (f"moving {k} positions should turn each (sin, cos) pair by a fixed "
                           f"angle; pair {i} of your encoding does not turn so.")
    return True, "moving k positions turns every (sin, cos) pair by an angle that depends on k."


CONCEPTS: tuple[Concept, ...] = (
    Concept("positions-differ", "Identical tokens at different positions are told apart",
            ("A-edge-4", "A-why-6"), ("long",), _distinct_rows),
    Concept("values-bounded", "Every value is in [-1, 1]", ("A-why-6",), ("wide",), _bounded),
    Concept("shift-is-rotation", "A shift of k positions is a fixed rotation of each pair",
            ("A-why-6",), ("long",), _shift_is_rotation),
)


def _encoding_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    n_positions, d_model = probe.args
    return {"n_positions": n_positions, "d_model": d_model, "half": d_model // 2}


def _position_zero(recipe: Recipe, probe: Probe) -> np.ndarray:
    """Row 0 (position 0) is never compared: codes that keep it for padding zero it, and it
    holds only sin 0 and cos 0 whatever the frequencies, so the other rows tell every mistake
    (a mistake in the frequencies with a zeroed row 0 is still named)."""
    n_positions = probe.args[0]
    return np.arange(n_positions) == 0


def unexpressible(interface: Interface, canonical: dict[str, Any],
                  parameters: tuple[str, ...]) -> str | None:
    """A table too short to hold the course's padding row (its code would index past it)."""
    row = interface.padding_row
    if row is not None and int(canonical["n_positions"]) <= row:
        return f"the course's code zeroes row {row} for padding, beyond a shorter table"
    return None


#: what the stages of its pipeline are, in a sentence's words (``grader.core.locate``)
STAGE_WORDS = {
    "positions": "the positions", "frequencies": "the frequencies",
    "pair_frequencies": "the frequencies of the pairs", "angles": "the angles",
    "pair_angles": "the angles of the pairs",
}


TASK = Task("positional_encoding", positional_encoding.reference, positional_encoding.pipeline,
            make_probes, CONCEPTS, _encoding_fields, unknown_rows=_position_zero,
            stage_words=STAGE_WORDS, unexpressible=unexpressible)
