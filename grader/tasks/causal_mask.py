"""The ``causal_mask`` task: its probes (more keys than queries for the mask's alignment after a
KV cache, a first row that is empty if the diagonal is blocked), its conceptual checks, and how
a mask in any accepted form is read. Sizes come from the seed, so a hidden seed gives new shapes
with the same structure."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from grader.core.concepts import Concept, Outcomes, Verdict, output_of
from grader.core.probes import Maker, new_probe
from grader.core.tasks import Recipe, Task
from grader.model import Array, CallOutcome, Probe
from grader.registry import Interface
from reference.tasks import causal_mask


def make_probes(make: Maker) -> list[Probe]:
    square = int(make.rng.integers(4, 7))
    n_cache = int(make.rng.integers(2, 4))
    m_cache = n_cache + int(make.rng.integers(2, 5))
    return [
        new_probe("one-token", (1,), "unbatched", "square", bank=("A-edge-3",)),
        new_probe("square", (square,), "unbatched", "square", bank=("A-edge-6",), traced=True,
                  repeat=True),
        new_probe("square-m-given", (square + 1, square + 1), "unbatched", "square",
                  bank=("A-edge-6",)),
        new_probe("kv-cache", (n_cache, m_cache), "unbatched", "kv-cache", bank=("A-edge-6",),
                  traced=True),
        new_probe("kv-cache-one-query", (1, m_cache + 1), "unbatched", "kv-cache",
                  bank=("A-edge-6",)),
        new_probe("kv-cache-long", (n_cache + 2, m_cache + 3), "unbatched", "kv-cache",
                  bank=("A-edge-6",)),
    ]


def _kept(r: Outcomes, probe_id: str) -> Array:
    return output_of(r, probe_id) > 0.5


def _sees_itself(r: Outcomes) -> Verdict:
    keep = _kept(r, "square")
    ok = keep.ndim == 2 and keep.shape[0] == keep.shape[1] and bool(np.diag(keep).all())
    return ok, ("every token may attend to itself (the diagonal is kept)." if ok else
                "a token must be able to attend to itself: the diagonal of a square causal mask "
                "is allowed (and the first token has nothing else to attend to).")


def _no_future(r: Outcomes) -> Verdict:
    keep = _kept(r, "square")
    ok = keep.ndim == 2 and not np.triu(keep, k=1).any()
    return ok, ("no query may attend to a key after its own position." if ok else
                "some query may attend to a later key: the part of the mask above the diagonal "
                "must be blocked.")


def _last_query_sees_all(r: Outcomes) -> Verdict:
    keep = _kept(r, "kv-cache")
    probe = r["kv-cache"][0]
    n, m = probe.args
    ok = keep.shape == (n, m) and bool(keep[-1].all()) and not keep[0, m - n + 1:].any()
    return ok, ("with cached keys, the last query sees every key and the first sees up to its "
                "own position m - n." if ok else
                f"with n = {n} queries after {m - n} cached keys, the last query should see all "
                f"m = {m} keys and query 0 the keys 0..{m - n}.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("sees-itself", "Each token attends to itself", ("A-edge-6", "A-edge-3"),
            ("square",), _sees_itself),
    Concept("no-future", "No token attends to a later one", ("A-edge-6",), ("square",),
            _no_future),
    Concept("kv-cache-aligned", "After a KV cache the last query sees every key",
            ("A-edge-6",), ("kv-cache",), _last_query_sees_all),
)

#: an additive mask blocks with -inf or a number at least this far below 0
ADDITIVE_BLOCKED = -1e4


def _read_masks(outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
    """Masks in any accepted form as 1.0 (may attend) and 0.0 (blocked). One reading for the
    whole submission: additive (0 allowed, -inf or <= -1e4 blocked) when any of its masks holds
    such a value, else boolean or 0/1 (an all-zero additive 1 x 1 mask is then still read right)."""
    outputs = [o.output for o in outcomes if o.output is not None]
    additive = any(np.any(a.astype(np.float64) <= ADDITIVE_BLOCKED) for a in outputs
                   if a.dtype.kind == "f")

    def read(array: Array) -> Array:
        if not array.size:
            return array
        values = array.astype(np.float64)
        if additive and array.dtype.kind == "f":
            known = (values == 0) | (values <= ADDITIVE_BLOCKED)
            values = np.where(known, (values == 0).astype(np.float64), np.nan)
        return values

    return [dataclasses.replace(o, outputs={name: read(a) for name, a in o.outputs.items()},
                                repeat_output=None if o.repeat_output is None
                                else read(o.repeat_output))
            for o in outcomes]


def _mask_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    n = int(probe.args[0])
    m = int(probe.args[1]) if len(probe.args) > 1 and probe.args[1] is not None else n
    return {"n": n, "m": m}


def unexpressible(interface: Interface, canonical: dict[str, Any],
                  parameters: tuple[str, ...]) -> str | None:
    """More keys than queries, where the course's code takes one size."""
    if canonical.get("m") not in (None, canonical.get("n")) and \
            not (interface.receives("m") or "m" in parameters):
        return "the interface takes no number of keys (square masks only)"
    return None


STAGE_WORDS = {"causal_mask": "the causal mask",
               "query_positions": "the query positions the mask compares",
               "key_positions": "the key positions the mask compares"}


TASK = Task("causal_mask", causal_mask.reference, causal_mask.pipeline, make_probes, CONCEPTS,
            _mask_fields, read_outputs=_read_masks,
            read_as="masks read as 1 where the query may attend, 0 where it is blocked",
            stage_words=STAGE_WORDS, unexpressible=unexpressible)
