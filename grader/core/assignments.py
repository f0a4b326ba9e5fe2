"""An assignment ready to grade: its interface (``grader.registry``) joined with its task
(``grader.core.tasks``). Imports NumPy; the registry alone does not."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from grader import registry
from grader.core.padding import padding_read_as_reference, padding_rows
from grader.core.probes import DIAGNOSIS_ONLY, TILE_SIZED, stands_in_for
from grader.core.tasks import Outputs, Task, build_probes, kept, task
from grader.model import DEFAULT_SEED, CallOutcome, Probe

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

    def read_outcomes(self, probes: Sequence[Probe],
                      outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
        """The outcomes as every check reads them: the task's own reading of its outputs
        (``Task.read_outputs``), then a course's padding row read as the reference's."""
        read = (self.task.read_outputs(outcomes) if self.task.read_outputs is not None
                else list(outcomes))
        row = self.interface.padding_row
        if row is None:
            return read
        references = [self.reference_on(probe)[0] for probe in probes]
        return padding_read_as_reference(row, self.outputs[0], references, read)

    def unknown_rows(self, recipe: Any, probe: Probe) -> Any:
        """The output rows diagnosis does not compare for ``recipe`` on ``probe``: the task's
        (``Task.unknown_rows``) and a course's padding row."""
        rows = self.task.unknown_rows(recipe, probe) if self.task.unknown_rows else None
        row = self.interface.padding_row
        padding = None if row is None else padding_rows(row, self.reference_on(probe)[0])
        if padding is None or rows is None or rows.shape != padding.shape:
            return padding if rows is None else rows
        return rows | padding

    def variant(self, recipe: Any, *args: Any) -> Outputs:
        return self.task.pipeline(recipe, *args)

    def probes(self, seed: int = DEFAULT_SEED) -> list[Probe]:
        """The task's probes that this assignment's interface can express; where it can express
        no scored masked probe (a course that takes valid lengths), the masked probes kept for
        diagnosis (prefix masks) are scored in their place."""
        expressible = [p for p in build_probes(self.task.name, seed) if self.unexpressible(p) is None]
        ids = {p.id for p in expressible}
        kept = _traced_where_expressible(
            [self.with_fixed(p) for p in expressible if stands_in_for(p) not in ids])
        if any("masked" in p.tags and DIAGNOSIS_ONLY not in p.tags for p in kept):
            return kept
        return [dataclasses.replace(p, tags=p.tags - {DIAGNOSIS_ONLY})
                if {"masked", DIAGNOSIS_ONLY} <= p.tags else p for p in kept]

    def left_out(self, seed: int = DEFAULT_SEED) -> dict[str, str]:
        """The task's probes this interface cannot express, each with the reason."""
        probes = build_probes(self.task.name, seed)
        reasons = {p.id: self.unexpressible(p) for p in probes}
        ran = {p.id for p in self.probes(seed)} | {stands_in_for(p) for p in self.probes(seed)}
        return {probe_id: why for probe_id, why in reasons.items()
                if why is not None and probe_id not in ran
                and not any(p.id == probe_id and stands_in_for(p) for p in probes)}

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
        call = self.task.canonical.as_dict()  # (the queries and keys by the task's names)
        if interface.causal_square_only and canonical.get("causal") and \
                canonical[call["queries"]].shape[-2] != canonical[call["keys"]].shape[-2]:
            return "the course's causal flag is defined for as many keys as queries"
        if {"concept", TILE_SIZED} & probe.tags and any(
                name in canonical and canonical[name] != value for name, value in interface.fixed):
            return f"the course's code fixes {', '.join(dict(interface.fixed))} inside"
        theta = canonical.get("theta", self.task.canonical.default("theta"))
        if interface.theta is not None and theta not in (None, interface.theta):
            return f"the course's code fixes theta at {interface.theta:g}"
        if self.task.unexpressible is not None:
            return self.task.unexpressible(interface, canonical, parameters)
        return None

    @property
    def adapts_probes(self) -> bool:
        """Does the course's interface change the test inputs (``with_fixed``)?"""
        return bool(self.interface.fixed or self.interface.equal_widths
                    or self.interface.identity_output_projection)

    def with_fixed(self, probe: Probe) -> Probe:
        """The probe as the course's code runs it: the arguments it fixes inside (CS336's tile
        sizes) given their fixed values, its sequences of one width made that wide, and W_o
        the identity where the code has no output projection, so that the reference and the
        variants compute what that code computes."""
        if not self.adapts_probes:
            return probe
        return dataclasses.replace(probe, args=self.course_inputs(probe.args))

    def course_inputs(self, given: tuple[Any, ...]) -> tuple[Any, ...]:
        """A test input's arguments as the course's code runs them (``with_fixed``)."""
        interface = self.interface
        if not self.adapts_probes:
            return given
        probe = Probe("", tuple(given), frozenset())
        defaults = dict(self.task.canonical.defaults)
        fixed = dict(interface.fixed)
        names = self.arg_names
        last = max([names.index(name) + 1 for name in fixed] + [len(probe.args)])
        args = list(probe.args) + [defaults.get(name) for name in names[len(probe.args):last]]
        args = [fixed.get(name, value) for name, value in zip(names, args)]
        if interface.equal_widths:
            args = _equal_widths(args, [names.index(n) for n in interface.equal_widths])
        if interface.identity_output_projection and "W_o" in names:
            args = _identity_at(args, names.index("W_o"))
        return tuple(args)

    def rubric(self) -> dict[str, Any]:
        return registry.rubric_of(self.info)


def _equal_widths(args: list[Any], positions: list[int]) -> list[Any]:
    """The arrays at ``positions`` made as wide as the first: columns cut, or repeated in turn
    (the new ones are the array's own values, so dyadic inputs stay dyadic)."""
    import numpy as np

    width = args[positions[0]].shape[-1]
    for position in positions[1:]:
        array = args[position]
        if array.shape[-1] != width:
            columns = np.arange(width) % array.shape[-1]
            args[position] = np.ascontiguousarray(array[..., columns])
    return args


def _identity_at(args: list[Any], position: int) -> list[Any]:
    """The square weight at ``position`` replaced by the identity of its size and dtype (code
    with no output projection computes what W_o = I gives)."""
    import numpy as np

    weight = args[position]
    identity = np.eye(weight.shape[-1], dtype=weight.dtype)
    identity.flags.writeable = weight.flags.writeable
    args[position] = identity
    return args


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


def probe_inputs(name: str, probe_id: str, seed: int = 0) -> tuple[Any, ...]:
    """The arguments of one test input, fresh copies: of a task's (by its name), or as an
    assignment whose interface adapts the test inputs runs it (by its ID or folder)."""
    from grader.core import tasks

    if name in tasks.tasks():
        return tasks.probe_inputs(name, probe_id, seed)
    assignment = get(name)
    return assignment.course_inputs(tasks.probe_inputs(assignment.task.name, probe_id, seed))


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
