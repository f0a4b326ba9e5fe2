"""The ``rope`` task (rotary position embedding): its probes (positions that start late or jump,
several theta), its conceptual checks and how its evidence is told."""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.core.concepts import Concept, Outcomes, Verdict, close, output_of
from grader.core.probes import Maker, new_probe
from grader.core.tasks import Recipe, Task
from grader.model import Probe
from grader.registry import Interface
from reference.tasks import rope


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid
    start = int(make.rng.integers(5, 12))
    jumps = np.array(sorted(make.rng.choice(np.arange(1, 40), size=5, replace=False)))
    jumps[0] = 0 if jumps[0] > 3 else jumps[0]
    q, k = g(8), g(8)
    pair_distance = np.stack([q, k, q, k])
    return [
        new_probe("default", (g(5, 8),), "unbatched", bank=("A-why-6",), traced=True, repeat=True),
        new_probe("offset", (g(4, 8), np.arange(start, start + 4)), "unbatched",
                  bank=("A-err-4",)),
        new_probe("jumps", (g(5, 16), jumps), "unbatched", bank=("A-err-4",), traced=True),
        new_probe("theta", (g(3, 6), None, 500.0), "unbatched", bank=("A-why-6",)),
        new_probe("theta-and-positions", (g(4, 12), np.arange(2, 10, 2), 1.0e6), "unbatched",
                  bank=("A-why-6",)),
        new_probe("batched", (g(2, 3, 5, 8), np.arange(start, start + 5)), "batched",
                  bank=("B-20",)),
        new_probe("position-zero", (g(3, 8), np.zeros(3, dtype=np.int64)), "unbatched", "concept",
                  bank=("A-why-6",)),
        new_probe("relative", (pair_distance, np.array([0, 3, 5, 8])), "unbatched", "concept",
                  bank=("A-why-6",)),
    ]


#: what the three checks below say of code that rotates nothing: each property holds for the
#: identity too, and partial credit for doing nothing is none
UNROTATED = ("your output is its input at every position: nothing is rotated, so this "
             "property of the rotation says nothing yet.")


def _unrotated(r: Outcomes) -> bool:
    """Does the code give back its input at positions other than 0 ("jumps")?"""
    x, out = r["jumps"][0].args[0], output_of(r, "jumps")
    return out.shape == x.shape and close(out, x, 1e-9)


def _norms_kept(r: Outcomes) -> Verdict:
    x, out = r["jumps"][0].args[0], output_of(r, "jumps")
    if out.shape != x.shape:
        return False, f"the output should have the input's shape {x.shape}; got {out.shape}."
    if _unrotated(r):
        return False, UNROTATED
    norms_in = np.hypot(x[..., 0::2], x[..., 1::2])
    norms_out = np.hypot(out[..., 0::2], out[..., 1::2])
    ok = close(norms_out, norms_in, 1e-6)
    return ok, ("each pair (2i, 2i+1) keeps its length: RoPE only rotates." if ok else
                "a rotation keeps the length of each pair (2i, 2i+1); your output changes it.")


def _position_zero(r: Outcomes) -> Verdict:
    x, out = r["position-zero"][0].args[0], output_of(r, "position-zero")
    if _unrotated(r):
        return False, UNROTATED
    ok = close(out, x, 1e-9)
    return ok, ("at position 0 the rotation is the identity." if ok else
                "every token at position 0 should come back unchanged (a rotation by angle 0).")


def _relative(r: Outcomes) -> Verdict:
    out = output_of(r, "relative")
    if out.shape != (4, 8):
        return False, f"the output should have shape (4, 8); got {out.shape}."
    if _unrotated(r):
        return False, UNROTATED
    near, far = float(out[0] @ out[1]), float(out[2] @ out[3])
    ok = abs(near - far) <= 1e-6 * max(1.0, abs(near))
    return ok, ("the rotated query and key score the same at positions (0, 3) and (5, 8): "
                "only their distance counts." if ok else
                f"the same query and key at positions (0, 3) and (5, 8) should score the same "
                f"(only the distance 3 counts); yours give {near:.6g} and {far:.6g}.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("pair-norms-kept", "RoPE keeps each pair's length", ("A-why-6",), ("jumps",),
            _norms_kept),
    Concept("position-zero-identity", "Position 0 is the identity", ("A-why-6",),
            ("position-zero", "jumps"), _position_zero),
    Concept("relative-positions", "Rotated scores depend only on the distance", ("A-why-6",),
            ("relative", "jumps"), _relative),
)


def _rope_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    x = probe.args[0]
    positions = probe.args[1] if len(probe.args) > 1 else None
    n = x.shape[-2]
    shown = "0..n-1" if positions is None else str(np.asarray(positions).tolist())
    return {"n": n, "d": x.shape[-1], "positions": shown, "last": n - 1,
            "theta": probe.args[2] if len(probe.args) > 2 else 10000.0}


def unexpressible(interface: Interface, canonical: dict[str, Any],
                  parameters: tuple[str, ...]) -> str | None:
    """Given positions, where the course's code takes none."""
    takers = ("positions", "positions_range", "positions_batch", "positions_per_batch")
    if canonical.get("positions") is not None and not any(
            interface.receives(a) or a in parameters for a in takers):
        return "the interface takes no positions"
    return None


#: what the stages of its pipeline are, in a sentence's words (``grader.core.locate``)
STAGE_WORDS = {"positions": "the positions", "frequencies": "the frequencies",
               "angles": "the angles", "rotations": "the complex numbers that turn the pairs"}


TASK = Task("rope", rope.reference, rope.pipeline, make_probes, CONCEPTS, _rope_fields,
            stage_words=STAGE_WORDS, unexpressible=unexpressible)
