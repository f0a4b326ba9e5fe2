"""An encoding table's padding row (``padding_row`` in a course's interface): the row the
course's code zeroes for padding (`padding_idx`, as `sinusoid_table[padding_idx] = 0.`). It is
never compared: each answer's row is read as the reference's before any check, and diagnosis
leaves it out, so the other rows are checked and tell every mistake."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from grader.model import Array, CallOutcome


def padding_rows(row: int, reference: Array | None) -> Array | None:
    """The rows of an output like ``reference`` that are the padding row (one True), or None."""
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


def padding_read_as_reference(row: int, output: str, references: Sequence[Array | None],
                              outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
    """The outcomes with the padding row of ``output`` (and of its repeat) read as the
    reference's (``references``: the reference's ``output`` on each outcome's test input):
    nothing the code leaves there counts, for or against it."""
    read = []
    for reference, outcome in zip(references, outcomes):
        first = outcome.returned(output)
        if first is None:
            read.append(outcome)
            continue
        outputs = dict(outcome.outputs)
        outputs[output] = _as_reference_row(first, reference, row)
        again = outcome.repeat_output
        read.append(dataclasses.replace(
            outcome, outputs=outputs,
            repeat_output=None if again is None else _as_reference_row(again, reference, row)))
    return read
