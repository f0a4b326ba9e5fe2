"""Stage 2: run the submission in a disposable child process and collect raw arrays.

The grader never imports or executes student code. It starts a child (``child.py``) with the
submission, lets the caller plan the calls from what the child found on loading, and reads one
frame per call with a wall-clock deadline for the import and for each call. A call that hangs or
crashes costs that call: the child is killed (with its whole session and anything it left
behind) and a new one continues with the remaining probes, within the total budget.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from grader.config import DEFAULT_LIMITS, Limits
from grader.model import CallOutcome, GraderError, Probe, RunInfo, Submission, TracedValue
from grader.sandbox import forkserver, wire
from grader.sandbox.child import Child
from grader.sandbox.processes import become_subreaper, boot_ticks, reap_zombies, remove_leftovers
from grader.sandbox.spawn import done_with_base, printed, take_head_start

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
        values.append(TracedValue(int(cell.group(1)) if cell else None, line,
                                  max(0, min(depth, 100)), array,
                                  place.get("name") == CHANGED_INPUT))
    return tuple(values)


#: what reading a frame the submission forged can raise: all mean "it broke the channel"
MALFORMED = (wire.ProtocolError, ValueError, TypeError, KeyError, AttributeError, IndexError,
             OverflowError, MemoryError, RecursionError)

#: how much longer than its CPU budget a wait may last on the wall clock: the backstop for code
#: that sleeps or waits, generous so that a loaded machine never decides a verdict
WALL_FACTOR = 4.0
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
        prepare: Callable[[], object] | None = None) -> tuple[RunInfo, list[CallOutcome]]:
    """Load the submission in a child, let ``plan`` pick the calls, and run them.

    ``prepare`` runs in this process right after the first child starts, so that slow imports
    here overlap with the child's start-up. Runs in one process take turns (threads wait): the
    clean-up after a run kills by process, and would end a concurrent run's children.
    """
    global _last_run_started
    with _one_run_at_a_time:
        reap_zombies(_last_run_started)  # what died late in the run before
        _last_run_started = boot_ticks()
        try:
            return _run(submission, plan, limits, prepare)
        finally:
            reap_zombies(_last_run_started)


def _run(submission: Submission, plan: Planner, limits: Limits,
         prepare: Callable[[], object] | None) -> tuple[RunInfo, list[CallOutcome]]:
    info = RunInfo()
    layers = ["child-process", "new-session-kill", "rlimits", "scrubbed-environment",
              "audit-hook-tripwire", "raw-array-channel"]
    if become_subreaper():
        layers.append("child-subreaper")
    if forkserver.in_use():
        layers.append("prewarmed-fork-server")
    info.isolation = tuple(layers)
    started_wall = time.time()
    budget = Budget(limits)
    base, spawned = take_head_start(reusable=not forkserver.in_use())
    workdir, newroot = base / "work", base / "root"
    outputs: list[int] = []  # what each child printed
    outcomes: dict[int, CallOutcome] = {}
    tripped: list[str] = []
    uids: list[int] = []  # each child's own unprivileged user (as root)
    untouched = limits.disk_mb > 0  # the run's folder: no child wrote in it (so far)
    starved: set[int] = set()  # calls the wall-clock backstop stopped once: tried again
    try:
        planned: CallPlan | None = None
        attempt = 0
        timed_out: list[int] = []  # calls that ran out of time, in order
        idle_timeouts = 0  # attempts in a row that ended on a timeout with nothing returned
        while True:
            remaining = _next_calls(planned, outcomes, timed_out)
            done_before = len(outcomes)
            child = Child(submission, workdir, newroot, limits, spawned if attempt == 0 else None)
            outputs.append(child.output)
            uids.append(child.uid)
            budget.start_child()
            if prepare is not None and attempt == 0:
                prepare()
            try:
                planned = _drive(child, info, plan, planned, remaining, outcomes, tripped,
                                 limits, budget, starved, first=attempt == 0)
            finally:
                child.stop()
                untouched = untouched and child.own_root
            attempt += 1
            if planned is None or len(outcomes) == len(planned.probes):
                break
            made = remaining or list(range(len(planned.probes)))
            ended_on_timeout = _ended_on_timeout(outcomes, made, done_before)
            if ended_on_timeout is not None:
                timed_out.append(ended_on_timeout)
            idle_timeouts = (idle_timeouts + 1 if ended_on_timeout is not None
                             and len(outcomes) - done_before == 1 else 0)
            out_of_time = budget.used_up()
            if attempt > limits.max_restarts or out_of_time or idle_timeouts >= 2:
                last = outcomes[max(outcomes)] if outcomes else None
                kind = "timeout" if out_of_time or last is None else str(last.error_kind)
                reason = ("the time budget was used up" if out_of_time else
                          "two calls in a row ran out of time, with nothing returned between "
                          "them, so the remaining probes were skipped" if idle_timeouts >= 2 else
                          f"the submission's process was lost {attempt} times "
                          f"(last: {kind}), so the remaining probes were skipped")
                for i, probe in enumerate(planned.probes):
                    if i not in outcomes:
                        outcomes[i] = CallOutcome(probe.id, kind, f"not run: {reason}")
                break
        # (imported here: confine.py needs Unix modules, and the notebook check, which imports
        # this module, must load anywhere)
        from grader.sandbox.confine import only_the_uid_separates

        if only_the_uid_separates(info.isolation):
            for uid in uids:
                remove_leftovers(uid, started_wall)
        info.stdout = _excerpt(outputs)
        if tripped:
            info.forbidden = sorted(set(tripped))[:10]
        probes = planned.probes if planned else []
        return info, [outcomes[i] for i in range(len(probes))]
    finally:
        for output in outputs:
            with contextlib.suppress(OSError):
                os.close(output)
        done_with_base(base, untouched=untouched)


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


def _drive(child: Child, info: RunInfo, plan: Planner,
           planned: CallPlan | None, remaining: list[int],
           outcomes: dict[int, CallOutcome], tripped: list[str], limits: Limits,
           budget: Budget, starved: set[int], first: bool) -> CallPlan | None:
    """Talk to one child until it is done, hangs or dies; return the plan (made on first load)."""
    try:
        frame = budget.wait(child, limits.import_seconds)
        if not isinstance(frame, str) and frame[0].get("type") == "hardened":
            hardened = frame[0]
            # sent before the submission runs, so the submission cannot forge it
            layers = hardened.get("layers")
            layers = [x for x in layers if x in KNOWN_LAYERS] if isinstance(layers, list) else []
            child.confined_as(layers)
            if first:
                info.isolation = tuple(dict.fromkeys([*info.isolation, *layers]))
            if hardened.get("refused"):
                info.fatal = GraderError("isolation-unavailable", REFUSALS.get(
                    str(hardened["refused"]), REFUSED_MESSAGE))
                return None
            frame = budget.wait(child, limits.import_seconds)
    except (EOFError, wire.ProtocolError):
        frame = "lost"
        if first:
            kind, message = child.death_kind()
            info.fatal = GraderError(kind, message.replace("during the call", "while loading"))
            return None
    if isinstance(frame, str):
        if first:
            info.fatal = GraderError("timeout", _load_timeout_message(frame, limits))
            return None
        for i in remaining:
            outcomes[i] = CallOutcome(planned.probes[i].id, "timeout",  # type: ignore[union-attr]
                                      "not run: loading the submission again timed out")
        return planned
    header, _ = frame
    tripped.extend(_strings(header.get("tripped"), 10))
    if first:
        try:
            _info_from_loaded(header, info)
        except MALFORMED as exc:
            info.fatal = GraderError("crashed", f"the submission broke the result channel ({exc})")
            return None
        made = plan(info)
        if made is None:
            return None
        planned = CallPlan(*made)
        remaining = list(range(len(planned.probes)))
    assert planned is not None
    function, probes, calling, _ = CallPlan(*planned)
    child.send(wire.encode_calls(function, [probes[i] for i in remaining], calling))
    for position, index in enumerate(remaining):
        try:
            frame = budget.wait(child, limits.call_seconds)
        except (EOFError, wire.ProtocolError) as exc:
            if isinstance(exc, wire.ProtocolError):
                kind, message = "crashed", f"the submission broke the result channel ({exc})"
            else:
                kind, message = child.death_kind()
            outcomes[index] = CallOutcome(probes[index].id, kind, message)
            return planned
        if isinstance(frame, str):
            if frame == "wall" and index not in starved:
                starved.add(index)  # not reported yet: a new child tries this call again
            else:
                outcomes[index] = CallOutcome(probes[index].id, "timeout",
                                              _call_timeout_message(frame, limits))
            return planned
        header, blob = frame
        tripped.extend(_strings(header.get("tripped"), 10))
        if header.get("type") != "result" or header.get("index") != position:
            outcomes[index] = CallOutcome(probes[index].id, "crashed",
                                          "the submission broke the result channel")
            return planned
        try:
            outcomes[index] = _outcome(probes[index], header, blob)
        except MALFORMED as exc:
            outcomes[index] = CallOutcome(probes[index].id, "crashed",
                                          f"the submission broke the result channel ({exc})")
            return planned
    if len(outcomes) == len(probes):
        _trace(child, CallPlan(*planned), outcomes, tripped, limits, budget)
    return planned


def _trace(child: Child, planned: CallPlan, outcomes: dict[int, CallOutcome],
           tripped: list[str], limits: Limits, budget: Budget) -> None:
    """After every graded call: run the traced probes the plan wants again under the tracer,
    in the same child. Their values may only choose the line a report quotes: whatever
    happens here (an error, a hang, a broken frame) changes no outcome, only what was traced."""
    function, probes, calling, traces_for = planned
    answered = [outcomes[i] for i in range(len(probes))]
    wanted = [i for i in (traces_for(answered) if traces_for else range(len(probes)))
              if probes[i].traced and answered[i].ok]
    if not wanted:
        return
    child.send(wire.encode_calls(function, [probes[i] for i in wanted], calling, trace=True))
    position = 0
    try:
        while position < len(wanted):
            frame = budget.wait(child, limits.call_seconds)
            if isinstance(frame, str):
                return
            header, blob = frame
            tripped.extend(_strings(header.get("tripped"), 10))
            if header.get("type") == "done":  # (the graded calls')
                continue
            if header.get("type") != "result" or header.get("index") != position:
                return
            index = wanted[position]
            traced = _rerun_traced(probes[index], header, blob, answered[index])
            if traced:
                outcomes[index] = dataclasses.replace(outcomes[index], traced=traced)
            position += 1
    except (EOFError, *MALFORMED):
        return


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
