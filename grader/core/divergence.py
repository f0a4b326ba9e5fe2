"""Stage 4d (pure): where a wrong submission that no misconception explains first goes wrong.

On a traced call (see ``grader.core.locate``) the values the code computed are matched with the
correct computation's stages (the scores, the scaled scores, the weights, the heads, ...), in
order. The stages the code got right are said, with their lines; the first stage after them that
no value matches is where it goes wrong, and the first value of that stage's shape computed after
the last right one, matching no correct value, is quoted with the numbers that show it. This is
a finding of its own, not a misconception: it tells the student where to look.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grader.core.assignments import Assignment
from grader.core.compare import error_ratio, gap, tolerance_for
from grader.core.locate import quote, same, stage_words, stages_of
from grader.model import Array, CallOutcome, Probe, SourcePlace, TracedValue
from reference.stages import TileBlocks, TileStates

#: stages a correct submission may compute differently (any shift works before the softmax)
#: (and a mask may be built from positions compared in any form, or none)
#: (the values "after RoPE" are the values: RoPE never turns them)
OPTIONAL = frozenset({"shifted", "exponentials", "query_positions", "key_positions",
                      "v_rotated"})


@dataclass(frozen=True)
class Divergence:
    """The first stage that goes wrong, a sentence saying it, and the line if one was found."""

    stage: str
    message: str
    place: SourcePlace | None = None


#: a stage that holds the value of an earlier one when nothing is applied between them (the
#: attention weights are the softmax's when no scale or mask follows): told once, as the later
REPEATED_STAGES = {"weights": "softmax"}


def first_divergence(assignment: Assignment, probes: Sequence[Probe],
                     outcomes: Sequence[CallOutcome], sources: Sequence[str]
                     ) -> Divergence | None:
    """Where the submission first departs from the correct computation, on the first traced
    test input it gets wrong; None when no traced call shows it."""
    for probe, outcome in zip(probes, outcomes):
        if probe.traced and outcome.ok and outcome.traced and _wrong(assignment, probe, outcome):
            found = _diverge(assignment, probe, outcome.traced, sources, outcome.output)
            if found is not None:
                return found
    return None


def _wrong(assignment: Assignment, probe: Probe, outcome: CallOutcome) -> bool:
    expected = assignment.reference(*probe.args)[0]
    expected = np.asarray(expected, dtype=np.float64)
    assert outcome.output is not None
    if outcome.output.shape != expected.shape:
        return True
    tolerance = tolerance_for(outcome.output, expected, "large" in probe.tags)
    return error_ratio(outcome.output, expected, tolerance) > 1.0


def _diverge(assignment: Assignment, probe: Probe, traced: Sequence[TracedValue],
             sources: Sequence[str], returned: Array | None = None) -> Divergence | None:
    correct = {stage: value for stage, value in stages_of(assignment, {}, probe).items()
               if not isinstance(value, (TileStates, TileBlocks))}  # (tiles: any loop order)
    left = _left(traced)
    order = [stage for stage in correct if stage not in OPTIONAL]
    right: dict[str, int] = {}  # stage -> index in traced of its first matching value
    for stage in order:
        hit = next((i for i, t in enumerate(traced)
                    if not t.changes_input and _telling(t.array, correct[stage])
                    and same(t.array, correct[stage])), None)
        if hit is not None:
            right[stage] = hit
    if "output" in right:
        return None
    last = max((order.index(s) for s in right), default=-1)
    after = right[order[last]] if last >= 0 else -1
    told_right = [s for s in order[: last + 1] if s in right]
    for later, earlier in REPEATED_STAGES.items():  # one value when nothing comes between
        if later in right and earlier in told_right:
            told_right.remove(earlier)
    for wrong in order[last + 1:]:  # the first later stage some value of the code stands for
        target = correct[wrong]
        value = next(
            (t for i, t in enumerate(traced)
             if i > after and i in left and not t.changes_input and _shaped_like(t.array, target)
             and not any(same(t.array, v) for v in correct.values())), None)
        if value is not None:
            if "output" in correct and returned is not None and \
                    value.array.shape == returned.shape and same(value.array, returned):
                wrong, target = "output", correct["output"]  # what the call returned
            place = quote(value.cell, value.line, stage_words()[wrong], sources)
            where = " (" + (f"code cell {value.cell}, " if value.cell else "") + f"line {value.line}"
            return Divergence(wrong, f"{_sentence(told_right, wrong, traced, right)}"
                                     f"{where + ')' if place else ''}: "
                                     f"{_numbers(value.array, target)}.", place)
    if not told_right or last + 1 == len(order):  # (every stage right: nothing to point at)
        return None
    return Divergence(order[last + 1], f"{_sentence(told_right, None, traced, right)}.")


def _sentence(told_right: list[str], wrong: str | None, traced: Sequence[TracedValue],
              right: dict[str, int]) -> str:
    gone = (f"the first value that goes wrong is {stage_words()[wrong]}" if wrong else
            "after that, no value your code computes is one of the correct next steps")
    if not told_right:
        return gone[0].upper() + gone[1:]
    shown = [f"{stage_words()[s]} (line {traced[right[s]].line})" for s in told_right[-2:]]
    return f"Your code gets {' and '.join(shown)} right; {gone}"


def _telling(value: Array, stage: Array) -> bool:
    """Can ``value`` show that the code got ``stage`` right? Zeros matching one row or one
    head of it (position 0's angles, a buffer not filled yet) show nothing."""
    return value.shape == stage.shape or bool(np.any(value))


def _left(traced: Sequence[TracedValue]) -> set[int]:
    """The indices of the values the code left as they are: an array it goes on changing in
    place (a buffer of zeros filled later, angles turned into their sines) is quoted only as
    its last line left it."""
    last = {t.chain: i for i, t in enumerate(traced)}
    return {i for i, t in enumerate(traced) if t.chain < 0 or last[t.chain] == i}


def _shaped_like(value: Array, target: Array) -> bool:
    if value.shape == target.shape:
        return True
    return target.ndim >= 3 and value.shape == target.shape[-2:]  # one head at a time


def _numbers(value: Array, target: Array) -> str:
    if value.shape != target.shape:
        target = target.reshape(-1, *value.shape)[0]
    gaps = gap(value, target)
    at = np.unravel_index(int(np.argmax(gaps)), gaps.shape)
    index = tuple(int(i) for i in at)
    return f"at index {index} yours is {value[at]:.6g}, the correct value {target[at]:.6g}"
