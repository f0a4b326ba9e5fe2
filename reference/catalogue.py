"""THE misconception catalogue: one row per SPEC section 2 ID, the rows kept in
``reference.rows`` (one module per family of tasks), the single place they are defined.

Each row says what the misconception is (title, explanation in our own words, question-bank items)
and which wrong choices of the pipelines (``reference.stages``, ``reference.tasks``) produce it. Diagnosis is by behaviour only: a row
is claimed when a recipe containing one of its variants explains the submission's outputs.

Adding a misconception = adding a row to ``reference.rows`` (and, if it needs a new wrong choice,
a stage function in ``reference.stages`` or the task's ``reference.tasks`` module) plus a test.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType

from reference.misconception import Misconception, Wording
from reference.rows import attention, backward, causal_and_positions, tiled


def _carried(rows: tuple[Misconception, ...]) -> tuple[Misconception, ...]:
    """The rows with the wrong choices and the words that a later family of tasks gives an ID
    it carries over (``tiled.CARRIED``: an ID keeps its row, and gains the tasks' variants)."""
    out = []
    for row in rows:
        for carried in (tiled.CARRIED, tiled.CARRIED_BACKWARD):
            if row.id in carried:
                variants, told = carried[row.id]
                terms = {f"task:{task}": told for task in {t for v in variants for t in v.tasks}}
                row = dataclasses.replace(row, variants=row.variants + variants,
                                          in_conventions=MappingProxyType(
                                              {**row.in_conventions, **terms}))
        out.append(row)
    return tuple(out)


#: the rows of every family; the backward pass carries the forward's IDs over (each forward
#: variant also occurs in attention_backward), tiled attention some of them
CATALOGUE: tuple[Misconception, ...] = _carried((
    *backward.carried((*attention.ROWS, *causal_and_positions.ROWS)), *backward.ROWS,
    *tiled.ROWS, *tiled.BACKWARD_ROWS))

BY_ID: Mapping[str, Misconception] = MappingProxyType({m.id: m for m in CATALOGUE})


def deviations(task: str) -> tuple[tuple[str, str], ...]:
    """Every wrong (knob, choice) pair that can occur in ``task``, in catalogue order."""
    seen: dict[tuple[str, str], None] = {}
    for row in CATALOGUE:
        for variant in row.variants:
            if task in variant.tasks:
                seen[(variant.knob, variant.choice)] = None
    return tuple(seen)


def ids_for(task: str, recipe: Mapping[str, str]) -> tuple[str, ...]:
    """The misconception IDs that the wrong choices of ``recipe`` stand for, in catalogue order."""
    return _ids_for(task, frozenset(recipe.items()))


@functools.cache
def _ids_for(task: str, chosen: frozenset[tuple[str, str]]) -> tuple[str, ...]:
    hits, absorbs = _pair_index(task)
    absorbed: set[tuple[str, str]] = set()
    for pair in chosen:
        absorbed |= absorbs.get(pair, frozenset())
    named: set[int] = set()
    for pair in chosen - absorbed:
        named.update(hits.get(pair, ()))
    return tuple(CATALOGUE[i].id for i in sorted(named))


@functools.cache
def _pair_index(task: str) -> tuple[dict[tuple[str, str], tuple[int, ...]],
                                    dict[tuple[str, str], frozenset[tuple[str, str]]]]:
    """For each (knob, choice): the rows (positions) it names in ``task``, and the choices
    the rows it belongs to (in any task) absorb."""
    hits: dict[tuple[str, str], list[int]] = {}
    absorbs: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for position, row in enumerate(CATALOGUE):
        own = {(k, c) for k, choices in row.absorbs.items() for c in choices}
        for variant in row.variants:
            pair = (variant.knob, variant.choice)
            absorbs.setdefault(pair, set()).update(own)
            if task in variant.tasks:
                hits.setdefault(pair, []).append(position)
    return ({pair: tuple(dict.fromkeys(rows)) for pair, rows in hits.items()},
            {pair: frozenset(told) for pair, told in absorbs.items()})


def own_choices(row_id: str, recipe: Mapping[str, str]) -> dict[str, str]:
    """The wrong choices of ``recipe`` that stand for ``row_id`` (its variants, and the choices
    it absorbs): the part of a combined recipe that is this one mistake."""
    row = BY_ID[row_id]
    mine = {(v.knob, v.choice) for v in row.variants}
    mine |= {(knob, c) for knob, choices in row.absorbs.items() for c in choices}
    return {knob: choice for knob, choice in recipe.items() if (knob, choice) in mine}


def ignored_tags(task: str, recipe: Mapping[str, str]) -> frozenset[str]:
    """Probe tags on which ``recipe`` is not compared (see ``Misconception.ignores``)."""
    return _ignored_tags(task, frozenset(recipe.items()))


@functools.cache
def _ignored_tags(task: str, chosen: frozenset[tuple[str, str]]) -> frozenset[str]:
    tags: set[str] = set()
    for row_id in _ids_for(task, chosen):
        tags |= BY_ID[row_id].ignores
    return frozenset(tags)


def detected_by(detector: str) -> str:
    """The ID of the row found by ``detector`` ("batch", "input-mutation") rather than by a
    variant: diagnosis looks it up here instead of naming it."""
    return next(row.id for row in CATALOGUE if row.detector == detector)


def wording(row_id: str, conventions: frozenset[str] = frozenset()) -> Wording:
    """A row's title, explanation, fix and evidence sentence, in the terms of a course's
    conventions (or of a task) when they differ."""
    row = BY_ID[row_id]
    for key in sorted(conventions):
        if key in row.in_conventions:
            told = row.in_conventions[key]
            return told._replace(fingerprint=told.fingerprint or row.fingerprint)
    return Wording(row.title, row.explanation, row.fix, row.fingerprint)


def question_bank(row_id: str, conventions: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The question-bank items a row cites, in the task of ``conventions`` (``wording``'s keys)
    when it cites others there."""
    row = BY_ID[row_id]
    for key in sorted(conventions):
        if key in row.question_bank_in:
            return row.question_bank_in[key]
    return row.question_bank
