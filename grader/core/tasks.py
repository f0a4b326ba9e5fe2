"""The tasks an assignment is graded on: the record each task module fills in, and the
registry that finds them.

One module per task, ``grader/tasks/<task>.py``, holds everything numeric that is specific to
it (its probes, its concept checks, the sizes its evidence sentences quote, how its outputs are
read, the words for its own stages, what a course's interface cannot take) and defines
``TASK``; its reference and pipeline of (possibly wrong) choices are in
``reference/tasks/<task>.py``, its canonical call in its built-in assignment's
``[canonical]`` table (``grader.registry``). Nothing outside those places knows a task by its
name: the stages ask the task record.

A new task is: its two modules, its catalogue rows, its assignment folder and its fixtures.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from grader import registry
from grader.core import probes
from grader.core.concepts import Concept
from grader.model import Array, CallOutcome, Probe

if TYPE_CHECKING:
    from grader.registry import Interface

#: a task's outputs, in the order its canonical call declares them (None where the reference
#: computes none: that output is not compared)
Outputs = tuple["Array | None", ...]
Recipe = Mapping[str, str]
#: ``unexpressible(interface, canonical arguments, the course's parameters)``: why a course's
#: interface cannot take a probe's values of the task's own arguments, or None
Unexpressible = Callable[["Interface", dict[str, Any], tuple[str, ...]], "str | None"]

TASKS_PACKAGE = "grader.tasks"


@dataclass(frozen=True)
class Task:
    name: str
    #: the task's outputs on canonical arguments (``reference.tasks.<task>.reference``)
    reference: Callable[..., Outputs]
    #: ``pipeline(recipe, *args, record=None)``: the computation with the recipe's wrong
    #: choices (its intermediate values put in ``record``, a dict, when given)
    pipeline: Callable[..., Outputs]
    make_probes: Callable[[probes.Maker], list[Probe]]
    concepts: tuple[Concept, ...]
    #: the values an evidence sentence may quote, for one probe and the recipe that explains it
    evidence_fields: Callable[[Probe, Recipe], dict[str, object]]
    #: what the submission returned, read in the task's terms before anything compares it (a
    #: mask in any accepted form becomes 1.0 where a query may attend and 0.0 elsewhere)
    read_outputs: Callable[[Sequence[CallOutcome]], list[CallOutcome]] | None = None
    #: how the numbers an evidence sentence quotes were read (with ``read_outputs``)
    read_as: str = ""
    #: ``unknown_rows(recipe, probe)``: the output rows (queries) that are not compared for a
    #: recipe, or None (a query its broken mask left without any key computes whatever its
    #: fill value gives)
    unknown_rows: Callable[[Recipe, Probe], Array | None] | None = None
    #: the stages only this task's pipeline records, in a sentence's words (the shared ones
    #: are in ``grader.core.locate``)
    stage_words: Mapping[str, str] = field(default_factory=dict)
    unexpressible: Unexpressible | None = None
    #: the task is a softmax on its own, over the caller's axis: a literal fix names that axis
    #: and may exponentiate the line it rewrites (``reference.edits.Context``)
    softmax_alone: bool = False
    #: the outputs diagnosis matches against the variants, by name (none: the first only); a
    #: recipe explains a call when it explains every one of them the call returned
    diagnosed: tuple[str, ...] = ()
    #: outputs with one value per query row, (..., n) (a logsumexp): their ``unknown_rows``
    #: are on the last axis (on the other outputs, the second to last)
    row_outputs: tuple[str, ...] = ()
    #: the ``tiling`` check's call (``grader.core.tiling``): ``tiling_call(maker, length,
    #: width, block)`` gives the probe whose peak allocation is measured, or None (no check)
    tiling_call: Callable[[probes.Maker, int, int, int], Probe] | None = None

    @property
    def canonical(self) -> registry.Canonical:
        """Its canonical call: arguments, outputs by name, sequences."""
        return registry.canonical_call(self.name)


@functools.cache
def tasks() -> Mapping[str, Task]:
    """Every task, by name: the ``TASK`` of each module of ``grader/tasks/``."""
    package = importlib.import_module(TASKS_PACKAGE)
    found: dict[str, Task] = {}
    for info in pkgutil.iter_modules(package.__path__):
        task = getattr(importlib.import_module(f"{TASKS_PACKAGE}.{info.name}"), "TASK", None)
        if isinstance(task, Task):
            if task.name != info.name:
                raise ValueError(f"{TASKS_PACKAGE}.{info.name} defines the task {task.name!r}; "
                                 "a task's module is named after it")
            found[task.name] = task
    return MappingProxyType(found)


def task(name: str) -> Task:
    """The task of that name (``ValueError`` naming the known tasks)."""
    known = tasks()
    if name not in known:
        raise ValueError(f"unknown task {name!r} (known: {', '.join(known)})")
    return known[name]


def build_probes(task_name: str, seed: int) -> list[Probe]:
    """The probes of the task; the same seed always gives the same probes (each knows it).

    Made once per task and seed in a process (a batch grades hundreds of submissions on the
    same probes); their arrays are read-only, so that nothing can change them between uses.
    """
    return list(_made_probes(task_name, seed))


#: values computed from a probe's inputs alone (the reference's outputs, a recipe's), kept
#: across submissions: a batch grades hundreds on the same probes, and ``build_probes`` hands
#: out the same input objects. Keyed by the inputs' identity, which each entry keeps alive, so
#: an identity is never reused while its entry lives.
_KEPT: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}
KEPT_ENTRIES = 20_000


def kept(key: tuple[Any, ...], args: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """``compute()``, a function of ``args`` (and of ``key``, which says what it computes),
    computed once while ``args`` stays the same object; its arrays are read-only."""
    full = (*key, id(args))
    entry = _KEPT.get(full)
    if entry is not None and entry[0] is args:
        return entry[1]
    value = compute()
    for part in value if isinstance(value, tuple) else (value,):
        if isinstance(part, np.ndarray):
            part.setflags(write=False)
    if len(_KEPT) >= KEPT_ENTRIES:
        _KEPT.clear()
    _KEPT[full] = (args, value)
    return value


@functools.lru_cache(maxsize=64)
def _made_probes(task_name: str, seed: int) -> tuple[Probe, ...]:
    made = task(task_name).make_probes(probes.Maker(seed, task_name))
    for probe in made:
        for value in probe.args:
            if hasattr(value, "setflags"):
                value.setflags(write=False)
    return tuple(dataclasses.replace(p, meta=MappingProxyType({**p.meta, "seed": seed}))
                 for p in made)


def probe_inputs(task_name: str, probe_id: str, seed: int = 0) -> tuple[Any, ...]:
    """The arguments of one test input, fresh copies (what a report's reproducing call uses)."""
    for probe in build_probes(task_name, seed):
        if probe.id == probe_id:
            copies: dict[int, Any] = {}
            for value in probe.args:
                if isinstance(value, np.ndarray) and id(value) not in copies:
                    copies[id(value)] = value.copy()
            return tuple(copies.get(id(v), v) for v in probe.args)
    raise KeyError(f"no test input {probe_id!r} in {task_name!r}")
