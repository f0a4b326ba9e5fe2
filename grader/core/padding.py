"""An encoding table's padding row (``padding_row`` in a course's interface): the row the
course's code zeroes for padding (`padding_idx`, as `sinusoid_table[padding_idx] = 0.`). It is
never compared: each answer's row is read as the reference's before any check, and diagnosis
leaves it out, so the other rows are checked and tell every mistake."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from grader.model import CallOutcome, Probe

if TYPE_CHECKING:
    from grader.core.assignments import Assignment
    from grader.model import Array


def padding_rows(assignment: Assignment, probe: Probe) -> Array | None:
    """The rows of the probe's output that are the course's padding row (one True), or None."""
    row = assignment.interface.padding_row
    if row is None:
        return None
    reference = assignment.reference_on(probe)[0]
    if reference is None or reference.ndim < 2:
        return None
    return np.arange(reference.shape[-2]) == row


def _as_reference_row(array: Array, reference: Array | None, row: int) -> Array:
    if reference is None or array.shape != reference.shape or reference.ndim < 2 \
            or row >= reference.shape[-2]:
        return array
    kept = np.array(array, copy=True)
    kept[..., row, :] = reference[..., row, :]
    return kept


def padding_read_as_reference(assignment: Assignment, probes: Sequence[Probe],
                              outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
    """The outcomes with the padding row of each first output (and of its repeat) read as the
    reference's: nothing the code leaves there counts, for or against it."""
    row = assignment.interface.padding_row
    if row is None:
        return list(outcomes)
    read = []
    for probe, outcome in zip(probes, outcomes):
        name = assignment.outputs[0]
        first = outcome.returned(name)
        if first is None:
            read.append(outcome)
            continue
        reference = assignment.reference_on(probe)[0]
        outputs = dict(outcome.outputs)
        outputs[name] = _as_reference_row(first, reference, row)
        again = outcome.repeat_output
        read.append(dataclasses.replace(
            outcome, outputs=outputs,
            repeat_output=None if again is None else _as_reference_row(again, reference, row)))
    return read
