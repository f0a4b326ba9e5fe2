"""Stage 2: run the submission in a disposable child process and collect raw arrays.

The grader never imports or executes student code. It starts a child (``child.py``) with the
submission, lets the caller plan the calls from what the child found on loading, and reads one
frame per call with a deadline for the import and for each call (CPU time, the wall clock only
a backstop: ``Budget``). A call that hangs or crashes costs that call: the child is killed (with
its whole session and anything it left behind) and a new one continues with the remaining
probes, within the total budget.

The run's phases, over one ``RunState``: ``_run`` starts children until every call has an
outcome or it gives up on the rest (``_why_skip_the_rest``); each child is one ``_attempt``:
``_loaded`` (its confinement, then the loaded submission), ``_planned`` (the first load only),
``_graded_calls``, ``_traced_reruns``; ``_collect`` builds the result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from grader.config import DEFAULT_LIMITS, Limits
from grader.model import CallOutcome, GraderError, Probe, RunInfo, Submission, TracedValue
from grader.sandbox import forkserver, peak, wire
from grader.sandbox.child import Child
from grader.sandbox.processes import (
    become_subreaper,
    boot_ticks,
    reap_zombies,
    remove_leftovers,
    settle_run,
)
from grader.sandbox.spawn import Spawned, done_with_base, printed, take_head_start

OUTPUT_EXCERPT_BYTES = 4096
REFUSED_MESSAGE = (
    "the submission was not run: no filesystem isolation (mount namespace, Landlock or an "
    "unprivileged user) is available here, and its process could have written the grader's own "
    "files. Run the grader in a container or as a user that does not own its installation, or "
    "pass --unsafe-no-fs-isolation to run it anyway (only for code you trust)")

CLASSMATES_READABLE_MESSAGE = (
    "the submission was not run: here its own user is the only layer between it and the other "
    "submissions (no mount namespace, no Landlock), and they are readable by every user of this "
    "machine. Make the class folder private to the grader's user (chmod -R go-rwx), or grade "
    "where namespaces or Landlock are available")
#: the child's reasons for not running a submission (``worker.refusal``), as told to users
REFUSALS = {"no-filesystem-layer": REFUSED_MESSAGE,
            "classmates-readable": CLASSMATES_READABLE_MESSAGE}


#: given what the child found, pick (function name, probes) or None to stop after loading
Planner = Callable[[RunInfo], "CallPlan | tuple[str, Sequence[Probe]] | None"]


class CallPlan(NamedTuple):
    """What to call on which probes; ``interface`` (the course's, with its ``task``) when the
    function is called through one (see ``interface.py``). ``traces_for``, given every call's
    outcome, says which of the traced probes to run again under the tracer (None: all): the
    reruns cost more than the calls, and only a report that quotes a line needs them."""

    function: str
    probes: Sequence[Probe]
    interface: dict[str, Any] | None = None
    traces_for: Callable[[list[CallOutcome]], Sequence[int]] | None = None
    #: a multi-part assignment's functions and callings (``wire.encode_calls``), and which of
    #: them each probe is for (empty: ``function`` and ``interface`` serve every probe)
    targets: Sequence[dict[str, Any]] = ()
    target_of: Sequence[int] = ()
    #: the tiling check's calls, made once after everything else, each with its own time
    #: limit (``measured_seconds``), their peak allocation measured (``peak.py``); for a
    #: multi-part assignment, ``measured_target_of`` says which function each is for
    measured: Sequence[Probe] = ()
    measured_target_of: Sequence[int] = ()
    measured_seconds: float = 10.0

    def frame(self, calls: Sequence[int], trace: bool = False) -> bytes:
        """The request of these calls (indices of ``probes``)."""
        return wire.encode_calls(self.function, [self.probes[i] for i in calls], self.interface,
                                 trace=trace, targets=self.targets,
                                 target_of=[self.target_of[i] for i in calls]
                                 if self.target_of else ())


KNOWN_LAYERS = ("pid-namespace", "mount-namespace", "network-namespace", "ipc-namespace",
                "read-only-root", "unprivileged-uid", "no-capabilities", "landlock", "seccomp",
                "no-ipc")


def _strings(value: object, limit: int) -> list[str]:
    return [str(x)[:500] for x in value[:limit]] if isinstance(value, list) else []


def _error_from(value: object, default: str) -> GraderError:
    entry = value if isinstance(value, dict) else {}
    return GraderError(str(entry.get("kind", default)), str(entry.get("message"))[:4000])


def _info_from_loaded(header: dict[str, Any], info: RunInfo) -> None:
    """What the child found after loading, taken only in shapes the grader expects."""
    info.defined_functions = tuple(_strings(header.get("functions"), 200))
    fatal = header.get("fatal")
    if fatal:
        error = _error_from(fatal, "runtime-error")
        kind = error.kind if error.kind in ("syntax-error", "runtime-error") else "runtime-error"
        info.fatal = GraderError(kind, error.message)
    errors = header.get("errors")
    for entry in errors[:20] if isinstance(errors, list) else ():
        error = _error_from(entry, "runtime-error")
        where = entry.get("where") if isinstance(entry, dict) else None
        kind = error.kind if error.kind in ("syntax-error", "timeout", "memory-limit",
                                            "missing-dependency") else "runtime-error"
        info.load_errors.append(GraderError(kind, f"{str(where)[:100]}: {error.message}"))


def _outcome(probe: Probe, header: dict[str, Any], blob: bytes) -> CallOutcome:
    status = header.get("status")
    if status != "ok":
        kind = status if status in ("wrong-signature", "wrong-shape", "runtime-error",
                                    "memory-limit", "timeout") else "runtime-error"
        return CallOutcome(probe.id, kind, str(header.get("message", ""))[:2000])
    arrays = wire.decode_arrays(header, blob)
    if not any(role.startswith(wire.OUTPUT_ROLE) for role in arrays):
        raise wire.ProtocolError("result without output")
    # No answer to these inputs, right or wrong, is far larger than the inputs: refusing bigger
    # arrays here, and copying the rest out of the frame, keeps the grader's memory small.
    limit = _largest_answer(probe)
    too_big = next((a for a in arrays.values() if a.size > limit), None)
    if too_big is not None:
        return CallOutcome(probe.id, "wrong-shape",
                           f"returned an array of shape {tuple(too_big.shape)}, far larger than "
                           "any answer for these inputs")
    arrays = {role: array.copy() for role, array in arrays.items()}
    # the child sends back only the inputs the call changed; the others are the probe's own
    inputs = tuple(arrays.get(f"input:{position}", original)
                   for position, (_, original) in enumerate(probe.input_arrays()))
    seconds = header.get("seconds")
    return CallOutcome(
        probe.id,
        outputs={role[len(wire.OUTPUT_ROLE):]: array for role, array in arrays.items()
                 if role.startswith(wire.OUTPUT_ROLE)},
        repeat_output=arrays.get("repeat"),
        inputs_after=inputs,
        seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0,
    )


def _largest_answer(probe: Probe) -> int:
    """No answer to a probe's inputs, right or wrong, has more elements than this."""
    return 16 * probe.size + 4096


def _rerun_traced(probe: Probe, header: dict[str, Any], blob: bytes,
                  graded: CallOutcome) -> tuple[TracedValue, ...]:
    """The values of a traced rerun, if it returned what the graded call did: code that
    notices the tracer and computes something else (a decoy line) must not choose the line a
    report quotes."""
    import numpy as np

    if header.get("status") != "ok" or graded.output is None:
        return ()
    arrays = {role: array.copy() for role, array in wire.decode_arrays(header, blob).items()
              if role.startswith("trace") and array.size <= _largest_answer(probe)}
    again = arrays.get("trace-output")
    if again is None or again.shape != graded.output.shape or not np.array_equal(
            again, graded.output, equal_nan=True):
        return ()
    return _traced_values(header.get("trace"), arrays)


#: the name ``trace.py`` gives the entry of a line that changed an input in place
CHANGED_INPUT = "<changed input>"
_CELL_FILE = re.compile(r"<submission cell (\d{1,5})>")


def _traced_values(places: object, arrays: dict[str, Any]) -> tuple[TracedValue, ...]:
    """The traced call's values (``trace.py``), taken only in the shapes expected: they may
    only ever choose which line of the submission a report quotes."""
    if not isinstance(places, list):
        return ()
    values = []
    for index, place in enumerate(places[:300]):
        array = arrays.get(f"trace:{index}")
        if not isinstance(place, dict) or array is None:
            continue
        line, depth = place.get("line"), place.get("depth")
        if not (isinstance(line, int) and isinstance(depth, int) and 0 < line < 1_000_000):
            continue
        cell = _CELL_FILE.fullmatch(str(place.get("file")))
        chain = place.get("chain")
        values.append(TracedValue(int(cell.group(1)) if cell else None, line,
                                  max(0, min(depth, 100)), array,
                                  place.get("name") == CHANGED_INPUT,
                                  chain if isinstance(chain, int) else -1 - index))
    return tuple(values)


#: what reading a frame the submission forged can raise: all mean "it broke the channel"
MALFORMED = (wire.ProtocolError, ValueError, TypeError, KeyError, AttributeError, IndexError,
             OverflowError, MemoryError, RecursionError)

#: how much longer than its CPU budget a wait may last on the wall clock: the backstop for code
#: that sleeps or waits, generous so that a loaded machine never decides a verdict (one value
#: for the run, a notebook cell and the tiling call's fork: ``peak.WALL_FACTOR``)
WALL_FACTOR = peak.WALL_FACTOR
#: how often a slow wait looks at the CPU time the run has used (at first, and at least)
CPU_POLL_SECONDS = 0.2
MIN_POLL_SECONDS = 0.01
CORES = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


class Budget:
    """A run's time. What decides a verdict is the CPU time of the submission's own processes
    (a loaded machine slows the wall clock, not that); the wall clock, ``WALL_FACTOR`` times as
    long, only stops code that sleeps or waits, and a call it stops is tried once more."""

    def __init__(self, limits: Limits) -> None:
        self.total_cpu = limits.total_seconds
        self.spent_cpu = 0.0  # by the children before the current one
        self.wall_deadline = time.monotonic() + limits.total_seconds * WALL_FACTOR
        self.child_cpu = 0.0  # the current child's, when last looked at

    def start_child(self) -> None:
        self.spent_cpu += self.child_cpu
        self.child_cpu = 0.0

    def used_up(self) -> bool:
        return (self.spent_cpu + self.child_cpu >= self.total_cpu
                or time.monotonic() >= self.wall_deadline)

    def wait(self, child: Child, cpu_seconds: float) -> tuple[dict[str, Any], bytes] | str:
        """The child's next frame; or why none came: ``"cpu"`` (it used ``cpu_seconds`` of CPU,
        or the run's CPU budget), ``"wall"`` (the backstop: it waited, slept or was starved).
        EOFError and ProtocolError as ``Child.next_frame``."""
        started_cpu = None
        poll = CPU_POLL_SECONDS
        wall_end = min(time.monotonic() + cpu_seconds * WALL_FACTOR, self.wall_deadline)
        while True:
            now = time.monotonic()
            if now >= wall_end:
                return "wall"
            # a frame that comes quickly costs no look at /proc: only slow waits measure, more
            # often as the budget nears its end (the run's processes use at most a core each)
            frame = child.next_frame(min(wall_end, now + poll))
            if frame is not None:
                return frame
            used = child.cpu_seconds()
            if started_cpu is None:  # (the first look: what came before this wait is not its)
                started_cpu = used - min(used, poll)
            self.child_cpu = used
            left = cpu_seconds - (used - started_cpu)
            if left <= 0 or self.used_up():
                return "cpu"
            poll = min(CPU_POLL_SECONDS, max(MIN_POLL_SECONDS, left / CORES))


_one_run_at_a_time = threading.Lock()
_last_run_started: int | None = None


def run(submission: Submission, plan: Planner, limits: Limits = DEFAULT_LIMITS,
        prepare: Callable[[], object] | None = None, *,
        fork_server: bool | None = None) -> tuple[RunInfo, list[CallOutcome]]:
    """Load the submission in a child, let ``plan`` pick the calls, and run them.

    ``prepare`` runs in this process right after the first child starts, so that slow imports
    here overlap with the child's start-up. ``fork_server``: each child is a fork of the
    pre-warmed server (True) or a fresh interpreter (False); by default, as this process's
    runs are (``forkserver.forks_by_default``: batch's workers fork). Runs in one process take
    turns (threads wait): the clean-up after a run kills by process, and would end a
    concurrent run's children.
    """
    global _last_run_started
    forked = forkserver.forks_by_default() if fork_server is None else fork_server
    with _one_run_at_a_time:
        reap_zombies(_last_run_started)  # what died late in the run before
        _last_run_started = boot_ticks()
        try:
            return _run(submission, plan, limits, prepare, forked)
        finally:
            # nothing of the run is left a child of this process, dead or alive, when it returns
            settle_run(_last_run_started, forkserver.server_pids())


@dataclasses.dataclass
class RunState:
    """What a run has learned so far, shared by its phases: the report's ``info``, each call's
    outcome (by its index in the plan), what the tripwires caught, and what decides restarts."""

    info: RunInfo
    limits: Limits
    budget: Budget
    #: the calls to make: None until the first child has loaded the submission (and after a
    #: refusal to run it: then no call is reported)
    plan: CallPlan | None = None
    outcomes: dict[int, CallOutcome] = dataclasses.field(default_factory=dict)
    #: what the tripwires caught, as the child said
    tripped: list[str] = dataclasses.field(default_factory=list)
    #: calls the wall-clock backstop stopped once, not reported yet: a new child tries them again
    starved: set[int] = dataclasses.field(default_factory=set)
    #: calls that ran out of time, in order
    timed_out: list[int] = dataclasses.field(default_factory=list)
    #: attempts in a row that ended on a timeout with nothing returned between them
    idle_timeouts: int = 0
    #: children started so far
    attempts: int = 0

    @property
    def finished(self) -> bool:
        """Nothing is left to run: no plan (yet: loading failed, or nothing to call), or an
        outcome for every call."""
        return self.plan is None or len(self.outcomes) == len(self.plan.probes)

    def note_tripped(self, header: dict[str, Any]) -> None:
        self.tripped.extend(_strings(header.get("tripped"), 10))


@dataclasses.dataclass
class _Children:
    """The children of one run: where they run, how they start (the worker started ahead for
    the first, or forks of the server), and what each leaves to close or clean up."""

    base: Path
    head_start: Spawned | None
    forked: bool
    #: what each child printed (an fd each)
    outputs: list[int] = dataclasses.field(default_factory=list)
    #: each child's own unprivileged user (as root)
    uids: list[int] = dataclasses.field(default_factory=list)
    #: the run's folder: no child wrote in it (so far)
    untouched: bool = True
    #: the threads reaping the run's stopped children (started ones; the server reaps forks)
    reapers: list[threading.Thread] = dataclasses.field(default_factory=list)

    def start(self, submission: Submission, limits: Limits) -> Child:
        spawned, self.head_start = self.head_start, None
        server = forkserver.server() if self.forked else None
        child = Child(submission, self.base / "work", self.base / "root", limits, spawned,
                      server=server)
        self.outputs.append(child.output)
        self.uids.append(child.uid)
        return child

    def stop(self, child: Child) -> None:
        child.stop()
        if child.reaper is not None:
            self.reapers.append(child.reaper)
        self.untouched = self.untouched and child.own_root

    def close(self) -> None:
        for reaper in self.reapers:  # (each child of the run reaped before it returns)
            reaper.join(timeout=40)
        for output in self.outputs:
            with contextlib.suppress(OSError):
                os.close(output)
        done_with_base(self.base, untouched=self.untouched)


def _parent_layers(subreaper: bool, forked: bool) -> tuple[str, ...]:
    """The layers this side of a run provides, whatever the child finds."""
    layers = ["child-process", "new-session-kill", "rlimits", "scrubbed-environment",
              "audit-hook-tripwire", "raw-array-channel"]
    if subreaper:
        layers.append("child-subreaper")
    if forked:
        layers.append("prewarmed-fork-server")
    return tuple(layers)


def _run(submission: Submission, plan: Planner, limits: Limits,
         prepare: Callable[[], object] | None, forked: bool) -> tuple[RunInfo, list[CallOutcome]]:
    """Start children until every planned call has an outcome or the run gives up on the rest;
    then collect what they left."""
    state = RunState(RunInfo(isolation=_parent_layers(become_subreaper(), forked)), limits,
                     Budget(limits))
    started_wall = time.time()
    base, spawned = take_head_start(reusable=not forked)
    children = _Children(base, spawned, forked, untouched=limits.disk_mb > 0)
    try:
        while True:
            calls = _next_calls(state.plan, state.outcomes, state.timed_out)
            done_before = len(state.outcomes)
            child = children.start(submission, limits)
            state.budget.start_child()
            state.attempts += 1
            if prepare is not None and state.attempts == 1:
                prepare()
            try:
                _attempt(child, state, plan, calls)
            finally:
                children.stop(child)
            if state.finished:
                break
            _note_attempt(state, calls, done_before)
            skipped = _why_skip_the_rest(state, out_of_time=state.budget.used_up())
            if skipped is not None:
                _skip_the_rest(state, *skipped)
                break
        return _collect(state, children, started_wall)
    finally:
        children.close()


def _attempt(child: Child, state: RunState, plan: Planner, calls: list[int]) -> None:
    """Talk to one child until it is done, hangs or dies: it loads the submission (the first
    child's load is planned from), makes the graded calls, then the traced reruns."""
    loaded = _loaded(child, state, calls)
    if loaded is None:
        return
    if state.plan is None:
        state.plan = _planned(state, loaded, plan)
        if state.plan is None:
            return
        calls = list(range(len(state.plan.probes)))
    if _graded_calls(child, state, state.plan, calls) and state.finished:
        _traced_reruns(child, state, state.plan)
        _measured_calls(child, state, state.plan)


def _loaded(child: Child, state: RunState, calls: list[int]) -> dict[str, Any] | None:
    """The child's frame after loading the submission (its confinement's before it), or None
    when none came: then the run's fatal error (first load) or the calls' outcomes say why."""
    first_load = state.plan is None
    try:
        frame = state.budget.wait(child, state.limits.import_seconds)
        if not isinstance(frame, str) and frame[0].get("type") == "hardened":
            if not _take_confinement(child, state, frame[0]):
                return None
            frame = state.budget.wait(child, state.limits.import_seconds)
    except (EOFError, wire.ProtocolError):
        if first_load:
            kind, message = child.death_kind()
            state.info.fatal = GraderError(kind, message.replace("during the call",
                                                                 "while loading"))
            return None
        frame = "lost"
    if isinstance(frame, str):
        if first_load:
            state.info.fatal = GraderError("timeout", _load_timeout_message(frame, state.limits))
        else:
            _not_loaded_again(state, calls)
        return None
    state.note_tripped(frame[0])
    return frame[0]


def _take_confinement(child: Child, state: RunState, hardened: dict[str, Any]) -> bool:
    """What the child said of its layers, sent before the submission runs (so the submission
    cannot forge it); False when it refused to run the submission."""
    layers = _known_layers(hardened.get("layers"))
    child.confined_as(layers)
    if state.attempts == 1:  # (the first child's layers are the run's)
        state.info.isolation = tuple(dict.fromkeys([*state.info.isolation, *layers]))
    if hardened.get("refused"):
        state.info.fatal = GraderError("isolation-unavailable", REFUSALS.get(
            str(hardened["refused"]), REFUSED_MESSAGE))
        state.plan = None  # not run: no call is reported
        return False
    return True


def _known_layers(layers: object) -> list[str]:
    """The layers a child announced, only those the grader knows."""
    return [x for x in layers if x in KNOWN_LAYERS] if isinstance(layers, list) else []


def _not_loaded_again(state: RunState, calls: list[int]) -> None:
    assert state.plan is not None
    for i in calls:
        state.outcomes[i] = CallOutcome(state.plan.probes[i].id, "timeout",
                                        "not run: loading the submission again timed out")


def _planned(state: RunState, loaded: dict[str, Any], plan: Planner) -> CallPlan | None:
    """The calls to make, planned from what the first child found on loading; None to stop
    (nothing to call, or a frame the grader cannot read: the run's fatal error)."""
    try:
        _info_from_loaded(loaded, state.info)
    except MALFORMED as exc:
        state.info.fatal = GraderError("crashed", _broke_the_channel(exc))
        return None
    made = plan(state.info)
    return None if made is None else CallPlan(*made)


def _broke_the_channel(exc: BaseException) -> str:
    return f"the submission broke the result channel ({exc})"


def _graded_calls(child: Child, state: RunState, plan: CallPlan, calls: list[int]) -> bool:
    """Have the child make ``calls`` and read each answer into the outcomes; False when it
    stopped before the last (it died, hung or broke the channel)."""
    child.send(plan.frame(calls))
    return all(_graded_call(child, state, plan.probes[index], index, position)
               for position, index in enumerate(calls))


def _graded_call(child: Child, state: RunState, probe: Probe, index: int, position: int) -> bool:
    """The answer to one call (the ``position``-th sent, call ``index`` of the plan), into the
    outcomes; False when this child can answer no more."""
    try:
        frame = state.budget.wait(child, state.limits.call_seconds)
    except (EOFError, wire.ProtocolError) as exc:
        kind, message = (("crashed", _broke_the_channel(exc))
                         if isinstance(exc, wire.ProtocolError) else child.death_kind())
        state.outcomes[index] = CallOutcome(probe.id, kind, message)
        return False
    if isinstance(frame, str):
        if frame == "wall" and index not in state.starved:
            state.starved.add(index)  # not reported yet: a new child tries this call again
        else:
            state.outcomes[index] = CallOutcome(probe.id, "timeout",
                                                _call_timeout_message(frame, state.limits))
        return False
    header, blob = frame
    state.note_tripped(header)
    if header.get("type") != "result" or header.get("index") != position:
        state.outcomes[index] = CallOutcome(probe.id, "crashed",
                                            "the submission broke the result channel")
        return False
    try:
        state.outcomes[index] = _outcome(probe, header, blob)
    except MALFORMED as exc:
        state.outcomes[index] = CallOutcome(probe.id, "crashed", _broke_the_channel(exc))
        return False
    return True


def _note_attempt(state: RunState, calls: list[int], done_before: int) -> None:
    """After a child that left calls without an outcome: did it end on a call that ran out of
    time, and had it returned anything before?"""
    assert state.plan is not None
    made = calls or list(range(len(state.plan.probes)))
    ended_on_timeout = _ended_on_timeout(state.outcomes, made, done_before)
    if ended_on_timeout is not None:
        state.timed_out.append(ended_on_timeout)
    idle = ended_on_timeout is not None and len(state.outcomes) - done_before == 1
    state.idle_timeouts = state.idle_timeouts + 1 if idle else 0


def _why_skip_the_rest(state: RunState, *, out_of_time: bool) -> tuple[str, str] | None:
    """The error kind and the reason for the calls not run, when the run gives up on them: the
    time budget is used up, two calls in a row ran out of time with nothing returned between
    them, or the child was lost more often than the limits allow; None to start another."""
    if not (state.attempts > state.limits.max_restarts or out_of_time
            or state.idle_timeouts >= 2):
        return None
    # the last call that failed says how (a call that returned has no error kind); with none,
    # only the wall clock stopped the children
    failed = [state.outcomes[i].error_kind for i in sorted(state.outcomes)
              if state.outcomes[i].error_kind is not None]
    kind = "timeout" if out_of_time or not failed else str(failed[-1])
    if out_of_time:
        return kind, "the time budget was used up"
    if state.idle_timeouts >= 2:
        return kind, ("two calls in a row ran out of time, with nothing returned between them, "
                      "so the remaining probes were skipped")
    return kind, (f"the submission's process was lost {state.attempts} times (last: {kind}), "
                  "so the remaining probes were skipped")


def _skip_the_rest(state: RunState, kind: str, reason: str) -> None:
    assert state.plan is not None
    for i, probe in enumerate(state.plan.probes):
        if i not in state.outcomes:
            state.outcomes[i] = CallOutcome(probe.id, kind, f"not run: {reason}")


def _collect(state: RunState, children: _Children,
             started_wall: float) -> tuple[RunInfo, list[CallOutcome]]:
    """The run's info and every planned call's outcome, in the plan's order, once what the
    children left running as their own uids is gone."""
    # (imported here: confine.py needs Unix modules, and the notebook check, which imports
    # this module, must load anywhere)
    from grader.sandbox.confine import only_the_uid_separates

    if only_the_uid_separates(state.info.isolation):
        for uid in children.uids:
            remove_leftovers(uid, started_wall)
    state.info.stdout = _excerpt(children.outputs)
    if state.tripped:
        state.info.forbidden = sorted(set(state.tripped))[:10]
    probes = state.plan.probes if state.plan else []
    return state.info, [state.outcomes[i] for i in range(len(probes))]


def _next_calls(planned: CallPlan | None, outcomes: dict[int, CallOutcome],
                timed_out: list[int]) -> list[int]:
    """The calls a new child makes: those without an outcome, the ones of a suspect kind last
    (a kind, such as masked or batched, that every call that ran out of time has and no call
    that returned has), so that a submission that hangs on masked inputs, say, still answers all
    the others."""
    if planned is None:
        return []
    probes = planned.probes
    suspect: frozenset[str] = frozenset()
    if timed_out:
        returned = [probes[i].tags for i, o in outcomes.items() if o.error_kind != "timeout"]
        suspect = (frozenset.intersection(*(probes[i].tags for i in timed_out))
                   - frozenset().union(*returned))
    left = [i for i in range(len(probes)) if i not in outcomes]
    return sorted(left, key=lambda i: bool(probes[i].tags & suspect))


def _ended_on_timeout(outcomes: dict[int, CallOutcome], made: list[int],
                      done_before: int) -> int | None:
    """The call an attempt ended on, if it ran out of time (of the calls ``made``, in order, the
    last to have an outcome: none had one before the attempt)."""
    last = next((i for i in reversed(made) if i in outcomes), None)
    if last is None or len(outcomes) == done_before:
        return None
    return last if outcomes[last].error_kind == "timeout" else None


def _traced_reruns(child: Child, state: RunState, plan: CallPlan) -> None:
    """After every graded call: run the traced probes the plan wants again under the tracer,
    in the same child. Their values may only choose the line a report quotes: whatever
    happens here (an error, a hang, a broken frame) changes no outcome, only what was traced."""
    answered = [state.outcomes[i] for i in range(len(plan.probes))]
    wanted = _traces_wanted(plan, answered)
    if not wanted:
        return
    child.send(plan.frame(wanted, trace=True))
    position = 0
    try:
        while position < len(wanted):
            frame = state.budget.wait(child, state.limits.call_seconds)
            if isinstance(frame, str):
                return
            header, blob = frame
            state.note_tripped(header)
            if header.get("type") == "done":  # (the graded calls')
                continue
            if header.get("type") != "result" or header.get("index") != position:
                return
            index = wanted[position]
            traced = _rerun_traced(plan.probes[index], header, blob, answered[index])
            if traced:
                state.outcomes[index] = dataclasses.replace(state.outcomes[index], traced=traced)
            position += 1
    except (EOFError, *MALFORMED):
        return


def _measured_calls(child: Child, state: RunState, plan: CallPlan) -> None:
    """After every graded call and traced rerun: the tiling check's calls, in the same child,
    each with its own time limit. What happens here changes no outcome: a call that fails,
    hangs or breaks the frame leaves its measurement a sentence saying why there is none."""
    if not plan.measured:
        return
    done: list[dict[str, Any] | str] = []
    state.info.measurements = done
    why_none = "the grader's time for this submission ran out before the call"
    if state.budget.used_up():
        done.extend(why_none for _ in plan.measured)
        return
    child.send(wire.encode_calls(plan.function, plan.measured, plan.interface, peak=True,
                                 targets=plan.targets, target_of=plan.measured_target_of))
    try:
        while len(done) < len(plan.measured):
            frame = state.budget.wait(child, plan.measured_seconds)
            if isinstance(frame, str):
                break
            header, _ = frame
            state.note_tripped(header)
            if header.get("type") == "done":
                continue
            if header.get("type") != "result" or header.get("index") != len(done):
                break
            measurement = header.get("peak")
            done.append(measurement if isinstance(measurement, dict) and header.get("status")
                        == "ok" else f"the call ended with {str(header.get('status'))[:40]}")
    except (EOFError, *MALFORMED):
        pass
    timeout = f"the call did not return within {plan.measured_seconds:g} s"
    done.extend(timeout for _ in range(len(plan.measured) - len(done)))


def _traces_wanted(plan: CallPlan, answered: list[CallOutcome]) -> list[int]:
    """The calls to run again under the tracer: those the plan wants (all, unless it says),
    of a traced probe, that returned arrays."""
    chosen = plan.traces_for(answered) if plan.traces_for else range(len(plan.probes))
    return [i for i in chosen if plan.probes[i].traced and answered[i].ok]


def _load_timeout_message(why: str, limits: Limits) -> str:
    if why == "wall":
        return (f"loading the submission did not finish within "
                f"{limits.import_seconds * WALL_FACTOR:g} s, though it was not computing: it "
                "waited or slept")
    return f"loading the submission took more than {limits.import_seconds:g} s of CPU time"


def _call_timeout_message(why: str, limits: Limits) -> str:
    if why == "wall":
        return (f"the call did not return within {limits.call_seconds * WALL_FACTOR:g} s, twice, "
                "though it was not computing: it waited or slept")
    return f"the call did not return within {limits.call_seconds:g} s of CPU time"


def _excerpt(outputs: list[int]) -> str:
    """The start of what the run's children printed, in order."""
    parts = []
    for output in outputs:
        with contextlib.suppress(OSError):
            parts.append(printed(output, OUTPUT_EXCERPT_BYTES))
    return b"".join(parts)[:OUTPUT_EXCERPT_BYTES].decode("utf-8", "replace")
