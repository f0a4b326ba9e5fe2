"""Checks and points (pure): the only place a score is computed, from the assignment's rubric.

Reference checks compare the outputs of a group of probes with the reference (partial credit per
probe), concept checks come from ``grader.core.concepts``, and two contract checks look at the inputs
after the call and at a second call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grader.core import concepts, tiling
from grader.core.assignments import Assignment, Outputs
from grader.core.compare import mismatch_message, tolerance_for
from grader.core.evidence import first_mutated_input
from grader.core.probes import DIAGNOSIS_ONLY, scored_only, stands_in_for
from grader.model import CallOutcome, CheckResult, Probe

#: partial credit is given in whole steps of this many points, so that every view of the score
#: (including GitHub Classroom's, which counts passing tests) can show it exactly
CREDIT_STEP = 0.1


def partial_credit(points: float, passed: float, total: float) -> float:
    """The share of ``points`` earned by ``passed`` of ``total`` (probes, or points of a check
    rescaled), rounded down to a step."""
    if total <= 0 or passed >= total:
        return float(points) if passed >= total > 0 else 0.0
    steps = math.floor(points * passed / total / CREDIT_STEP + 1e-9)
    return round(steps * CREDIT_STEP, 4)


def _selected(selector: dict[str, list[str]], probe: Probe) -> bool:
    return set(selector.get("all", [])) <= probe.tags and not set(selector.get("none", [])) & probe.tags


def probe_mismatch(probe: Probe, outcome: CallOutcome, reference: Outputs,
                   names: Sequence[str]) -> str:
    """Empty when the call matches the reference, else why not (first broken contract first):
    each output the task declares (``names``, in order, aligned with ``reference``) is
    compared where the reference computes it and the call returned it."""
    if not outcome.ok:  # the error itself is in the report once, with every probe it hit
        return f"the call failed ({outcome.error_kind}; see the errors)"
    large = "large" in probe.tags
    for position, (name, expected) in enumerate(zip(names, reference)):
        got = outcome.returned(name)
        if expected is None or got is None:  # not computed by the reference, or not returned
            continue
        message = mismatch_message(got, expected, tolerance_for(got, expected, large),
                                   what=name if position == 0 else f"returned {name}")
        if message:
            return message
    return ""


def answers_as_the_reference(assignment: Assignment, probes: Sequence[Probe],
                             outcomes: Sequence[CallOutcome]) -> bool:
    """Did every call (diagnosis-only ones too) return what the reference does, the same
    again when repeated, and leave its inputs as they were? Then no mistake can be named, no
    report quotes a line, and the traced reruns that would choose one are not needed."""
    outcomes = assignment.read_outcomes(probes, outcomes)
    for probe, outcome in zip(probes, outcomes):
        if probe_mismatch(probe, outcome, assignment.reference_on(probe), assignment.outputs):
            return False
        again, output = outcome.repeat_output, outcome.output
        if again is not None and output is not None and not np.array_equal(
                again, output, equal_nan=True):
            return False
    return first_mutated_input(assignment.arg_names, probes, outcomes) is None


def _shape_text(assignment: Assignment, probe: Probe) -> str:
    parts = []
    for name, value in zip(assignment.arg_names, probe.args):
        parts.append(f"{name} {tuple(value.shape)}" if isinstance(value, np.ndarray)
                     else f"{name}={value!r}")
    return ", ".join(parts)


def _reference_check(spec: dict[str, Any], assignment: Assignment, probes: Sequence[Probe],
                     outcomes: Sequence[CallOutcome], mismatches: list[str]) -> CheckResult:
    chosen = [i for i, p in enumerate(probes) if _selected(spec["probes"], p)]
    failing = [i for i in chosen if mismatches[i]]
    points = partial_credit(spec["points"], len(chosen) - len(failing), len(chosen))
    if not failing:
        message = f"{len(chosen)} / {len(chosen)} test inputs give the right answer."
    else:
        first = min(failing, key=lambda i: (probes[i].size, i))
        message = (f"{len(chosen) - len(failing)} / {len(chosen)} test inputs give the right answer. "
                   f"Smallest failing one, '{probes[first].id}' "
                   f"({_shape_text(assignment, probes[first])}): {mismatches[first]}")
    bank = sorted({b for i in chosen for b in probes[i].question_bank})
    return CheckResult(spec["id"], "reference", not failing, round(points, 4),
                       float(spec["points"]), message, tuple(bank))


def _inputs_unchanged(assignment: Assignment, probes: Sequence[Probe],
                      outcomes: Sequence[CallOutcome]) -> tuple[bool, str]:
    mutated = first_mutated_input(assignment.arg_names, probes, outcomes)
    if mutated is None:
        return True, "no input array is modified."
    probe, name = mutated
    return False, f"the call on test input '{probe.id}' modified {name} in place."


def _same_twice(probes: Sequence[Probe], outcomes: Sequence[CallOutcome]) -> tuple[bool, str]:
    for probe, outcome in zip(probes, outcomes):
        if probe.repeat:
            if not outcome.ok or outcome.repeat_output is None:
                return False, f"the call on test input '{probe.id}' failed."
            assert outcome.output is not None
            same = outcome.output.shape == outcome.repeat_output.shape and np.allclose(
                outcome.output, outcome.repeat_output, rtol=1e-9, atol=1e-12, equal_nan=True)
            return same, ("calling twice with the same arrays gives the same result." if same else
                          "calling the function twice with the same arrays gave different "
                          "results (state kept between calls, or inputs modified in place).")
    return True, "not tested here."


def score_checks(assignment: Assignment, probes: Sequence[Probe],
                 outcomes: Sequence[CallOutcome], references: Sequence[Outputs],
                 measurement: tiling.Measurement = None) -> list[CheckResult]:
    """Every check of the assignment's rubric, with its points; ``references`` are the reference
    (output, weights) of each probe; ``measurement`` the tiling check's (``grader.core.tiling``;
    None: not measured). Probes tagged ``diagnosis-only`` (there to name mistakes within what a
    restricted interface can express) never count."""
    probes, outcomes, references = scored_only(probes, outcomes, references)
    mismatches = [probe_mismatch(p, o, r, assignment.outputs)
                  for p, o, r in zip(probes, outcomes, references)]
    by_id = {p.id: (p, o) for p, o in zip(probes, outcomes)}
    for probe, outcome in zip(probes, outcomes):  # read as the probe it stands in for
        by_id.setdefault(stands_in_for(probe) or probe.id, (probe, outcome))
    verdicts = concepts.evaluate(assignment.task.concepts, by_id)
    concept_verdicts = {c.id: (c, ok, msg) for c, ok, msg in verdicts}
    results: list[CheckResult] = []
    for spec in probed_checks(assignment, probes):
        check_id, points = spec["id"], float(spec["points"])
        if spec["category"] == "reference":
            results.append(_reference_check(spec, assignment, probes, outcomes, mismatches))
        elif check_id in CONTRACT_CHECKS:
            results.append(CONTRACT_CHECKS[check_id](spec, assignment, probes, outcomes))
        elif check_id == tiling.CHECK_ID:
            results.append(tiling.check(spec, measurement, tiling.tiles_run(assignment)))
        else:
            concept, passed, message = concept_verdicts[check_id]
            results.append(CheckResult(check_id, "probe", passed, points if passed else 0.0,
                                       points, concept_message(concept.title, passed, message),
                                       concept.question_bank))
    return results


def probed_checks(assignment: Assignment, probes: Sequence[Probe]) -> list[dict[str, Any]]:
    """The rubric's checks that these probes can decide (an interface that cannot express some
    probes, a mask where it takes lengths, say, leaves the checks built on them out)."""
    probes = [p for p in probes if DIAGNOSIS_ONLY not in p.tags]
    ids = {stands_in_for(p) or p.id for p in probes}
    needs = {c.id: set(c.needs) for c in assignment.task.concepts}
    kept = []
    for spec in assignment.rubric()["checks"]:
        if spec["category"] == "reference":
            probed = any(_selected(spec["probes"], p) for p in probes)
        elif spec["id"] == "same-result-twice":
            probed = any(p.repeat for p in probes)
        else:
            probed = needs.get(spec["id"], set()) <= ids
        if probed:
            kept.append(spec)
    return kept


def _returns_arrays(spec: dict[str, Any], assignment: Assignment, probes: Sequence[Probe],
                    outcomes: Sequence[CallOutcome]) -> CheckResult:
    points = float(spec["points"])
    ok_count = sum(o.ok for o in outcomes)
    passed = ok_count == len(outcomes)
    message = (f"{ok_count} / {len(outcomes)} calls returned a numeric array."
               + ("" if passed else " " + _first_failure(outcomes)))
    earned = partial_credit(points, ok_count, len(outcomes))
    return CheckResult(spec["id"], "interface", passed, round(earned, 4), points, message)


def _inputs_unchanged_check(spec: dict[str, Any], assignment: Assignment,
                            probes: Sequence[Probe], outcomes: Sequence[CallOutcome]
                            ) -> CheckResult:
    passed, message = _inputs_unchanged(assignment, probes, outcomes)
    if passed and not any(o.ok for o in outcomes):  # (a failed check never reads as a pass)
        passed, message = False, ("no call returned, so whether the inputs are left as they "
                                  "were could not be seen.")
    points = float(spec["points"])
    return CheckResult(spec["id"], spec["category"], passed, points if passed else 0.0, points,
                       message)


def _same_twice_check(spec: dict[str, Any], assignment: Assignment, probes: Sequence[Probe],
                      outcomes: Sequence[CallOutcome]) -> CheckResult:
    passed, message = _same_twice(probes, outcomes)
    points = float(spec["points"])
    return CheckResult(spec["id"], spec["category"], passed, points if passed else 0.0, points,
                       message)


#: the rubric checks on the function's contract rather than on a concept of the question banks
CONTRACT_CHECKS: dict[str, Callable[[dict[str, Any], Assignment, Sequence[Probe],
                                     Sequence[CallOutcome]], CheckResult]] = {
    "returns-arrays": _returns_arrays,
    "inputs-unchanged": _inputs_unchanged_check,
    "same-result-twice": _same_twice_check,
}


def _first_failure(outcomes: Sequence[CallOutcome]) -> str:
    for outcome in outcomes:
        if not outcome.ok:
            # (the error itself is in the report's errors, once)
            return (f"First failure, test input '{outcome.probe_id}' ({outcome.error_kind}; "
                    "see the errors).")
    return ""


def max_score(assignment: Assignment, probes: Sequence[Probe] | None = None) -> float:
    """The points of every check, or of those ``probes`` can decide."""
    checks = assignment.rubric()["checks"] if probes is None else probed_checks(assignment, probes)
    return round(sum(float(spec["points"]) for spec in checks), 4)


def concept_message(title: str, passed: bool, message: str) -> str:
    """A property check's message: a passed one says the property and what was seen; a failed
    one only what was seen (its title states the property as if it held, which read like a
    pass beside [FAIL])."""
    return f"{title}: {message}" if passed else message
