"""An assignment ready to grade: its interface (``grader.registry``) joined with its task
(``grader.core.tasks``). Imports NumPy; the registry alone does not."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Any

from grader import registry
from grader.core.probes import DIAGNOSIS_ONLY
from grader.core.tasks import Outputs, Task, build_probes, kept, task
from grader.model import DEFAULT_SEED, Probe

__all__ = ["Assignment", "Outputs", "get"]


@dataclass(frozen=True)
class Assignment:
    info: registry.AssignmentInfo
    task: Task

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def function(self) -> str:
        return self.info.function

    @property
    def signature(self) -> str:
        return self.info.signature

    @property
    def arg_names(self) -> tuple[str, ...]:
        """The canonical arguments' names (what the probes hold, in order)."""
        return self.task.canonical.arguments

    @property
    def outputs(self) -> tuple[str, ...]:
        """What the function returns, by name, in order (the first is the output)."""
        return self.task.canonical.outputs

    @property
    def diagnosed_outputs(self) -> tuple[str, ...]:
        """The outputs diagnosis matches against the catalogue's variants (and the evidence
        quotes): the task's choice, else the first."""
        return self.task.diagnosed or self.outputs[:1]

    @property
    def summary(self) -> str:
        return self.info.summary

    @property
    def conventions(self) -> tuple[str, ...]:
        return self.info.conventions

    @property
    def interface(self) -> registry.Interface:
        return self.info.interface

    def wording_terms(self) -> frozenset[str]:
        """The terms a catalogue row is worded in for this assignment (``catalogue.wording``):
        its course's conventions, and its task."""
        return frozenset(self.interface.conventions() | {f"task:{self.task.name}"})

    @property
    def through_interface(self) -> bool:
        """Is the function called through a course's interface (not as SPEC's own)?"""
        return not self.interface.canonical_for(self.task.name)

    def calling(self) -> dict[str, Any]:
        """How the child calls the submission: the task's canonical call (its arguments and
        outputs by name), and the course's interface (None for SPEC's own; see
        ``grader/sandbox/interface.py``)."""
        interface = self.interface.as_dict() if self.through_interface else None
        return {"interface": interface, "task": self.task.canonical.as_dict()}

    def reference(self, *args: Any) -> Outputs:
        return self.task.reference(*args)

    def reference_on(self, probe: Probe) -> Outputs:
        """The reference's outputs on a probe's inputs (computed once per probe; read-only)."""
        return kept(("reference", self.task.name), probe.args,
                    lambda: self.task.reference(*probe.args))

    def variant(self, recipe: Any, *args: Any) -> Outputs:
        return self.task.pipeline(recipe, *args)

    def probes(self, seed: int = DEFAULT_SEED) -> list[Probe]:
        """The task's probes that this assignment's interface can express; where it can express
        no scored masked probe (a course that takes valid lengths), the masked probes kept for
        diagnosis (prefix masks) are scored in their place."""
        kept = _traced_where_expressible(
            [p for p in build_probes(self.task.name, seed) if self.unexpressible(p) is None])
        if any("masked" in p.tags and DIAGNOSIS_ONLY not in p.tags for p in kept):
            return kept
        return [dataclasses.replace(p, tags=p.tags - {DIAGNOSIS_ONLY})
                if {"masked", DIAGNOSIS_ONLY} <= p.tags else p for p in kept]

    def left_out(self, seed: int = DEFAULT_SEED) -> dict[str, str]:
        """The task's probes this interface cannot express, each with the reason."""
        reasons = {p.id: self.unexpressible(p) for p in build_probes(self.task.name, seed)}
        return {probe_id: why for probe_id, why in reasons.items() if why is not None}

    def unexpressible(self, probe: Probe) -> str | None:
        """Why the course's interface cannot take this probe's inputs, or None: a mask it
        cannot say, cross-attention where it is self-attention only, or (the task's own
        reasons) a value of the task's own arguments."""
        interface = self.info.interface
        canonical = dict(zip(self.arg_names, probe.args))
        parameters = interface.parameters or self.arg_names
        mask = canonical.get("mask")
        takes_mask = any(interface.receives(a) or a in parameters for a in ("mask", "valid_lens"))
        if mask is not None and (interface.mask == "none" or not takes_mask):
            return "the interface takes no mask"
        if mask is not None and interface.mask_shape == "shared" and not _shared(mask):
            return "the interface takes one mask for the whole batch"
        if mask is not None and interface.mask == "lengths" and not _prefix_mask(mask):
            return "the interface takes valid lengths, not arbitrary masks"
        if interface.self_attention_only and canonical.get("X_q") is not canonical.get("X_kv"):
            return "the interface is self-attention only"
        theta = canonical.get("theta", self.task.canonical.default("theta"))
        if interface.theta is not None and theta not in (None, interface.theta):
            return f"the course's code fixes theta at {interface.theta:g}"
        if self.task.unexpressible is not None:
            return self.task.unexpressible(interface, canonical, parameters)
        return None

    def rubric(self) -> dict[str, Any]:
        return registry.rubric_of(self.info)


def _shared(mask: Any) -> bool:
    """Is the mask the same for every leading index (one (n, m) mask)?"""

    flat = mask.reshape((-1,) + mask.shape[-2:])
    return bool((flat == flat[:1]).all())


def _prefix_mask(mask: Any) -> bool:
    """Does every row allow a prefix of the keys (what valid lengths can say)?"""
    import numpy as np

    counts = mask.sum(axis=-1, keepdims=True)
    return bool(np.array_equal(mask, np.arange(mask.shape[-1]) < counts)) and bool(
        (counts > 0).all())


@cache
def get(reference: str) -> Assignment:
    """The assignment with this ID or in this folder (``KeyError`` naming the known ones)."""
    info = registry.get(reference)
    return Assignment(info, task(info.task))


def _traced_where_expressible(probes: list[Probe]) -> list[Probe]:
    """The probes, with a traced one of each kind the task traces (masked or not) that the
    interface left out replaced by the first ordinary one of that kind it can express: a course
    without an axis, or with self-attention only, gets its lines quoted too."""
    traced_kinds = {"masked" in p.tags for p in probes if p.traced}
    ordinary = [p for p in probes if not p.batched and not p.traced
                and not p.tags & {"large", "concept", "no-diagnosis"}]
    chosen = set()
    for masked in (False, True):
        if masked not in traced_kinds:
            first = next((p for p in ordinary if ("masked" in p.tags) == masked), None)
            if first is not None:
                chosen.add(first.id)
    return [dataclasses.replace(p, traced=True) if p.id in chosen else p for p in probes]
