"""The shape of a catalogue row (``reference.catalogue``): a misconception, the wrong choices
of the pipelines (``reference.stages``, ``reference.tasks``) that produce it, and how it is told."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from reference import edits


class Wording(NamedTuple):
    """How a row is told: its title, explanation, fix and evidence sentence (empty: the row's
    own), in a course's convention or a task's terms."""

    title: str
    explanation: str
    fix: str
    fingerprint: str = ""


@dataclass(frozen=True)
class Variant:
    """One wrong choice of one pipeline stage, in the tasks where it can occur."""

    knob: str
    choice: str
    tasks: tuple[str, ...]


@dataclass(frozen=True)
class Misconception:
    id: str
    title: str
    explanation: str
    question_bank: tuple[str, ...]
    variants: tuple[Variant, ...]
    #: evidence sentence; fields from the task's ``evidence_fields`` (d_k, sqrt_dk, m, ...)
    fingerprint: str
    #: wrong choices this one already explains, so they are not named twice
    absorbs: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    #: probe tags on which a recipe containing this misconception is not compared
    ignores: frozenset[str] = frozenset()
    #: how it is detected when it has no variant: "input-mutation" or "batch"
    detector: str = "variant"
    #: the title, explanation and fix in a course whose convention differs from SPEC's, keyed
    #: by "mask:<convention>" or "projections:<layout>" (the same mistake, told in its terms),
    #: or in the terms of one task, keyed by "task:<task>"
    in_conventions: Mapping[str, Wording] = field(
        default_factory=lambda: MappingProxyType({}))
    #: what to change, in one sentence, with the code it should become where it is one line
    fix: str = ""
    #: the question-bank items cited in one task instead of ``question_bank``, keyed by
    #: "task:<task>" (a mask builder's report does not cite items on masking the softmax)
    question_bank_in: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: the stages (``reference.stages.Stages``) whose line a report may quote as where this
    #: mistake enters (``grader.core.locate``); none: it is never located
    stages: tuple[str, ...] = ()
    #: how the quoted line is rewritten so that this mistake is gone (``reference.edits``), in
    #: SPEC's conventions; the first that applies to the line is the report's literal fix
    rewrites: tuple[edits.Rewrite, ...] = ()
    #: the mistake is in how a helper is called (on the values, before the split), not inside
    #: it: the line quoted is the outermost that computes the stage, not the first
    at_call: bool = False
    #: stages where the same mistake is usually written a second time (the max beside the sum,
    #: V beside K): their lines get the literal fix too, so that applying it leaves no half
    also: tuple[str, ...] = ()
    #: tasks where the rewrites of one line do not undo the mistake (a forward mistake in a
    #: backward assignment is written twice, in the forward and in the chain rule after it):
    #: there the report gives the sentence alone
    sentence_only_in: tuple[str, ...] = ()


def variants_of(knob: str, *choices: str, only: tuple[str, ...]) -> tuple[Variant, ...]:
    return tuple(Variant(knob, c, only) for c in choices)
