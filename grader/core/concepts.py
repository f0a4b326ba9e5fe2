"""Conceptual probes (pure): properties from the question banks, checked on the student's outputs.

Each check reads only the outputs the student's function returned (and the probe inputs), not the
reference, so it says which concept a wrong submission breaks even when no catalogued
misconception explains it. Each task's checks are in ``grader/tasks/<task>.py``; here the
record of a check, how they are run, and the checks several tasks share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from grader.model import Array, CallOutcome, Probe

Outcomes = Mapping[str, tuple[Probe, CallOutcome]]
Verdict = tuple[bool, str]
ATOL = 1e-4


@dataclass(frozen=True)
class Concept:
    id: str
    title: str
    question_bank: tuple[str, ...]
    needs: tuple[str, ...]
    check: Callable[[Outcomes], Verdict]


def output_of(results: Outcomes, probe_id: str) -> Array:
    """The (first) output the call on ``probe_id`` returned, as float64."""
    outcome = results[probe_id][1]
    assert outcome.output is not None
    return outcome.output.astype(np.float64)


def close(a: Array, b: Array, atol: float = ATOL) -> bool:
    """Same shape, finite, and equal within the concept checks' tolerance."""
    return a.shape == b.shape and bool(np.all(np.isfinite(a))) and bool(
        np.allclose(a, b, rtol=1e-3, atol=atol))


def padding_ignored(r: Outcomes) -> Verdict:
    a, b = output_of(r, "padding"), output_of(r, "padding-changed")
    ok = close(a, b)
    return ok, ("changing a key and value that every query has masked leaves the output unchanged."
                if ok else "a key that every query has masked still changes your output: masked "
                "positions must have no influence at all.")


def permutation(r: Outcomes) -> Verdict:
    probe = r["permuted"][0]
    base, permuted = output_of(r, probe.meta["source"]), output_of(r, "permuted")
    order = probe.meta["query_order"]
    if base.shape != permuted.shape:
        return False, "permuting the tokens changed the output's shape."
    ok = close(permuted, base[order])
    return ok, ("shuffling the queries shuffles the output rows the same way, and shuffling "
                "key/value pairs together changes nothing." if ok else
                "reordering the queries should reorder the output rows identically, and "
                "reordering key/value pairs together should change nothing; your output does not "
                "behave so.")


def identical_rows(probe_id: str, first: int, second: int) -> Callable[[Outcomes], Verdict]:
    def check(r: Outcomes) -> Verdict:
        out = output_of(r, probe_id)
        ok = out.shape[-2] > second and close(out[..., first, :], out[..., second, :], 1e-6)
        return ok, ("identical queries give identical output rows." if ok else
                    f"queries {first} and {second} are identical, so their output rows should be "
                    "identical too.")

    return check


def finite_for_large(r: Outcomes) -> Verdict:
    out = output_of(r, "large-logits")
    ok = bool(np.all(np.isfinite(out)))
    return ok, ("scores around 1e4 still give finite results." if ok else
                "with scores around 1e4 your result contains NaN or inf; subtract each row's "
                "maximum before exponentiating (softmax is shift-invariant).")


def shape_is(probe_id: str, expected: Callable[[Probe], tuple[int, ...]]
             ) -> Callable[[Outcomes], Verdict]:
    def check(r: Outcomes) -> Verdict:
        probe = r[probe_id][0]
        got, want = tuple(output_of(r, probe_id).shape), expected(probe)
        return got == want, (f"output shape {got} is right for these inputs." if got == want else
                             f"output shape {got}, expected {want}.")

    return check


def evaluate(checks: tuple[Concept, ...], results: Outcomes) -> list[tuple[Concept, bool, str]]:
    """Run every concept check of a task on the outcomes (keyed by probe id)."""
    verdicts = []
    for concept in checks:
        failed = [p for p in concept.needs if p not in results or not results[p][1].ok]
        if failed:
            outcome = results[failed[0]][1] if failed[0] in results else None
            kind = outcome.error_kind if outcome and outcome.error_kind else "no output"
            # (the exception itself is told once, in the report's errors, with its count)
            verdicts.append((concept, False, f"the call on test input '{failed[0]}' failed "
                                             f"({kind}: see the errors)."))
            continue
        try:
            passed, message = concept.check(results)
        except (ValueError, IndexError, TypeError) as exc:
            passed, message = False, f"the output could not be checked ({exc})."
        verdicts.append((concept, passed, message))
    return verdicts
