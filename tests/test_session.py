"""The run loop's phases and pure helpers (``grader/sandbox/session.py``), without processes: a
child is a stand-in that hands out the frames a test gives it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from grader.config import Limits
from grader.model import CallOutcome, GraderError, Probe, RunInfo
from grader.sandbox import session
from grader.sandbox.session import Budget, CallPlan, RunState

LIMITS = Limits(import_seconds=1.0, call_seconds=0.5, total_seconds=5.0, max_restarts=2)


def probe(name: str, *tags: str, traced: bool = False) -> Probe:
    return Probe(name, (np.zeros((2, 2)),), frozenset(tags), traced=traced)


PROBES = (probe("plain"), probe("masked", "masked"), probe("batched", "batched"),
          probe("masked-batched", "masked", "batched"))
PLAN = CallPlan("f", PROBES)


def answered(kind: str | None = None, name: str = "p") -> CallOutcome:
    if kind is None:
        return CallOutcome(name, outputs={"output": np.zeros((2, 2))})
    return CallOutcome(name, kind, "message")


def state(plan: CallPlan | None = PLAN, **fields: Any) -> RunState:
    return RunState(RunInfo(), LIMITS, Budget(LIMITS), plan, **fields)


class StandIn:
    """A child that answers with the frames given (a string: no frame, the clock ran out the
    way ``Budget.wait`` says; an exception: raised), and records what it is told."""

    def __init__(self, *frames: Any, cpu_step: float = 0.0) -> None:
        self.frames = list(frames)
        self.sent: list[bytes] = []
        self.layers: list[str] | None = None
        self.cpu = 0.0
        self.cpu_step = cpu_step

    def next_frame(self, deadline: float) -> tuple[dict[str, Any], bytes] | None:
        if not self.frames:
            time.sleep(max(0.0, min(deadline - time.monotonic(), 0.05)))
            return None
        frame = self.frames.pop(0)
        if isinstance(frame, BaseException):
            raise frame
        return frame

    def cpu_seconds(self) -> float:
        self.cpu += self.cpu_step
        return self.cpu

    def death_kind(self) -> tuple[str, str]:
        return "crashed", "the submission's process exited with status 3 during the call"

    def confined_as(self, layers: list[str]) -> None:
        self.layers = layers

    def send(self, data: bytes) -> None:
        self.sent.append(data)


def result(position: int, status: str = "runtime-error", **more: Any) -> tuple[dict, bytes]:
    return {"type": "result", "index": position, "status": status, "message": "boom", **more}, b""


def loaded(*functions: Any, **more: Any) -> tuple[dict, bytes]:
    return {"type": "loaded", "functions": list(functions), **more}, b""



# -- which calls a new child makes, and why a run gives up -----------------------------------

def test_no_plan_no_calls() -> None:
    assert session._next_calls(None, {}, []) == []


def test_the_calls_without_an_outcome_in_order() -> None:
    assert session._next_calls(PLAN, {1: answered()}, []) == [0, 2, 3]


def test_calls_of_the_kind_every_timeout_had_go_last() -> None:
    outcomes = {1: answered("timeout")}
    assert session._next_calls(PLAN, outcomes, [1]) == [0, 2, 3]
    outcomes = {0: answered("timeout")}  # (no tag: nothing is suspect)
    assert session._next_calls(PLAN, outcomes, [0]) == [1, 2, 3]
    outcomes = {3: answered("timeout")}
    assert session._next_calls(PLAN, outcomes, [3]) == [0, 1, 2]


def test_a_kind_a_returned_call_has_is_not_suspect() -> None:
    """masked-batched timed out, but a masked call returned: only batched is suspect."""
    outcomes = {3: answered("timeout"), 1: answered()}
    assert session._next_calls(PLAN, outcomes, [3]) == [0, 2]
    outcomes = {3: answered("timeout"), 1: answered(), 2: answered()}
    assert session._next_calls(PLAN, outcomes, [3]) == [0]


def test_an_attempt_ended_on_the_last_call_made_if_it_timed_out() -> None:
    outcomes = {2: answered(), 0: answered("timeout")}
    assert session._ended_on_timeout(outcomes, [2, 0, 1], done_before=0) == 0
    assert session._ended_on_timeout(outcomes, [0, 2, 1], done_before=0) is None  # returned
    assert session._ended_on_timeout(outcomes, [2, 0, 1], done_before=2) is None  # nothing new
    assert session._ended_on_timeout({}, [0, 1], done_before=0) is None


def test_idle_timeouts_count_attempts_that_returned_nothing_before_running_out() -> None:
    run = state(outcomes={0: answered(), 1: answered("timeout")})
    session._note_attempt(run, [], done_before=0)  # (the first child made every call)
    assert (run.timed_out, run.idle_timeouts) == ([1], 0)  # call 0 returned first
    run.outcomes[2] = answered("timeout")
    session._note_attempt(run, [2, 3], done_before=2)
    assert (run.timed_out, run.idle_timeouts) == ([1, 2], 1)
    run.outcomes[3] = answered("crashed")
    session._note_attempt(run, [3], done_before=3)
    assert (run.timed_out, run.idle_timeouts) == ([1, 2], 0)


def test_a_run_goes_on_while_it_has_restarts_and_time() -> None:
    assert session._why_skip_the_rest(state(attempts=2), out_of_time=False) is None


@pytest.mark.parametrize("fields,out_of_time,kind,said", [
    ({"attempts": 1}, True, "timeout", "the time budget was used up"),
    ({"attempts": 1, "idle_timeouts": 2, "outcomes": {0: answered("timeout")}}, False,
     "timeout", "two calls in a row ran out of time"),
    ({"attempts": 3, "outcomes": {0: answered("timeout"), 2: answered("crashed")}}, False,
     "crashed", "the submission's process was lost 3 times (last: crashed)"),
    ({"attempts": 3}, False, "timeout", "lost 3 times (last: timeout)"),
    ({"attempts": 3, "outcomes": {0: answered("crashed"), 1: answered()}}, False,
     "crashed", "lost 3 times (last: crashed)"),
    ({"attempts": 3, "outcomes": {0: answered(), 1: answered()}}, False,
     "timeout", "lost 3 times (last: timeout)"),
])
def test_why_a_run_gives_up(fields: dict, out_of_time: bool, kind: str, said: str) -> None:
    why = session._why_skip_the_rest(state(**fields), out_of_time=out_of_time)
    assert why is not None and why[0] == kind and said in why[1], why


def test_the_calls_given_up_are_those_without_an_outcome() -> None:
    run = state(outcomes={1: answered()})
    session._skip_the_rest(run, "timeout", "the time budget was used up")
    assert run.finished and run.outcomes[1].ok
    assert [run.outcomes[i].message for i in (0, 2, 3)] == [
        "not run: the time budget was used up"] * 3


def test_a_run_is_finished_without_a_plan_or_with_every_outcome() -> None:
    assert state(None).finished
    assert not state(outcomes={0: answered()}).finished
    assert state(outcomes={i: answered() for i in range(4)}).finished


# -- what the child says, taken only in the shapes expected ----------------------------------

def test_the_parent_layers() -> None:
    assert "child-subreaper" not in session._parent_layers(False, False)
    layers = session._parent_layers(True, True)
    assert {"child-subreaper", "prewarmed-fork-server", "raw-array-channel"} <= set(layers)


def test_only_known_layers_are_taken() -> None:
    assert session._known_layers(["seccomp", "root-of-all", 7, "landlock"]) == [
        "seccomp", "landlock"]
    assert session._known_layers("seccomp") == []


def test_what_the_child_found_on_loading_is_coerced() -> None:
    info = RunInfo()
    session._info_from_loaded({"functions": ["f", 3, "x" * 900], "fatal": {"kind": "timeout"},
                               "errors": [{"kind": "timeout", "where": "cell 2",
                                           "message": "slow"}, "junk"]}, info)
    assert info.defined_functions == ("f", "3", "x" * 500)
    assert info.fatal == GraderError("runtime-error", "None")
    assert info.load_errors == [GraderError("timeout", "cell 2: slow"),
                                GraderError("runtime-error", "None: None")]


def test_traced_values_in_unexpected_shapes_are_dropped() -> None:
    arrays = {f"trace:{i}": np.ones(2) for i in range(4)}
    places = [{"line": 3, "depth": 500, "file": "<submission cell 2>"},
              {"line": 0, "depth": 0}, "junk",
              {"line": 7, "depth": -1, "file": "<submission>", "name": session.CHANGED_INPUT}]
    values = session._traced_values(places, arrays)
    assert [(v.cell, v.line, v.depth, v.changes_input) for v in values] == [
        (2, 3, 100, False), (None, 7, 0, True)]
    assert session._traced_values("junk", arrays) == ()


def test_only_traced_probes_that_returned_are_traced_again() -> None:
    plan = CallPlan("f", (probe("a", traced=True), probe("b"), probe("c", traced=True),
                          probe("d", traced=True)))
    outcomes = [answered(), answered(), answered("timeout"), answered()]
    assert session._traces_wanted(plan, outcomes) == [0, 3]
    chosen = plan._replace(traces_for=lambda answers: [3, 1])
    assert session._traces_wanted(chosen, outcomes) == [3]


# -- the phases, with a stand-in child -------------------------------------------------------

def attempt(child: Any, run: RunState, plan: Sequence[Probe] | None = PROBES,
            calls: list[int] | None = None) -> None:
    planner = (lambda info: None) if plan is None else (lambda info: CallPlan("f", plan))
    session._attempt(child, run, planner, calls or [])


def test_the_first_child_confines_itself_loads_and_is_planned_from() -> None:
    hardened = ({"type": "hardened", "layers": ["seccomp", "bogus"]}, b"")
    child = StandIn(hardened, loaded("f", tripped=["os.system"]),
                    *(result(i) for i in range(4)))
    run = state(None, attempts=1)
    attempt(child, run)
    assert child.layers == ["seccomp"] and run.info.isolation == ("seccomp",)
    assert run.info.defined_functions == ("f",) and run.tripped == ["os.system"]
    assert run.plan is not None and run.finished and len(child.sent) == 1
    assert {o.error_kind for o in run.outcomes.values()} == {"runtime-error"}


def test_a_later_childs_layers_are_not_the_runs() -> None:
    hardened = ({"type": "hardened", "layers": ["seccomp"]}, b"")
    run = state(attempts=2)
    attempt(StandIn(hardened, loaded(), *(result(i) for i in range(4))), run, calls=[0, 1, 2, 3])
    assert run.info.isolation == () and run.finished


def test_a_refusal_to_run_reports_no_call() -> None:
    refused = ({"type": "hardened", "layers": [], "refused": "classmates-readable"}, b"")
    run = state(attempts=2)
    attempt(StandIn(refused), run, calls=[0, 1])
    assert run.plan is None and run.finished
    assert run.info.fatal == GraderError("isolation-unavailable",
                                         session.CLASSMATES_READABLE_MESSAGE)


def test_a_first_child_that_dies_while_loading_is_the_runs_fatal_error() -> None:
    run = state(None, attempts=1)
    attempt(StandIn(EOFError()), run)
    assert run.info.fatal == GraderError(
        "crashed", "the submission's process exited with status 3 while loading")
    assert run.finished


def test_a_later_child_that_cannot_load_again_ends_the_calls_it_had() -> None:
    run = state(attempts=2, outcomes={0: answered()})
    attempt(StandIn(EOFError()), run, calls=[1, 3])
    assert sorted(run.outcomes) == [0, 1, 3]
    assert run.outcomes[3].message == "not run: loading the submission again timed out"


class Unreadable:
    def __str__(self) -> str:
        raise ValueError("no text")


def test_a_loaded_frame_the_grader_cannot_read_is_fatal() -> None:
    run = state(None, attempts=1)
    attempt(StandIn(loaded(functions=[Unreadable()])), run)
    assert run.info.fatal == GraderError(
        "crashed", "the submission broke the result channel (no text)")
    assert run.plan is None


def test_an_error_kind_the_grader_does_not_know_breaks_the_channel() -> None:
    run = state(None, attempts=1)
    attempt(StandIn(loaded(fatal={"kind": "full-marks", "message": "hi"})), run)
    assert run.info.fatal is not None and run.info.fatal.kind == "crashed"
    assert "full-marks" in run.info.fatal.message


def test_nothing_to_call_stops_after_loading() -> None:
    run = state(None, attempts=1)
    child = StandIn(loaded())
    attempt(child, run, plan=None)
    assert run.plan is None and child.sent == []


def test_an_answer_out_of_order_breaks_the_channel() -> None:
    run = state(attempts=2)
    attempt(StandIn(loaded(), result(0), result(0)), run, calls=[2, 0, 1])
    assert run.outcomes[2].error_kind == "runtime-error"
    assert run.outcomes[0] == CallOutcome("plain", "crashed",
                                          "the submission broke the result channel")
    assert 1 not in run.outcomes


def test_a_call_the_wall_clock_stopped_is_tried_again_once() -> None:
    run = state(attempts=2)
    run.limits = Limits(import_seconds=1.0, call_seconds=0.01, total_seconds=5.0)
    attempt(StandIn(loaded()), run, calls=[1, 2])
    assert run.starved == {1} and run.outcomes == {}
    attempt(StandIn(loaded()), run, calls=[1, 2])
    assert run.outcomes[1].error_kind == "timeout" and "twice" in run.outcomes[1].message


def test_a_dead_child_costs_the_call_it_was_making() -> None:
    run = state(attempts=2)
    attempt(StandIn(loaded(), result(0), EOFError()), run, calls=[0, 1, 2])
    assert run.outcomes[1].error_kind == "crashed" and 2 not in run.outcomes


# -- the budget ------------------------------------------------------------------------------

def test_a_frame_that_comes_is_returned() -> None:
    frame = result(0)
    assert Budget(LIMITS).wait(StandIn(frame), 1.0) == frame


def test_a_child_that_computes_runs_out_of_cpu_time() -> None:
    budget = Budget(LIMITS)
    started = time.monotonic()
    assert budget.wait(StandIn(cpu_step=0.2), 0.5) == "cpu"
    assert time.monotonic() - started < 1.0 and budget.child_cpu > 0


def test_a_child_that_sleeps_is_stopped_by_the_wall_clock() -> None:
    budget = Budget(LIMITS)
    started = time.monotonic()
    assert budget.wait(StandIn(), 0.02) == "wall"
    assert session.WALL_FACTOR * 0.02 <= time.monotonic() - started < 1.0


def test_the_budget_adds_up_the_cpu_time_of_every_child() -> None:
    budget = Budget(Limits(total_seconds=1.0))
    budget.child_cpu = 0.6
    budget.start_child()
    assert not budget.used_up()
    budget.child_cpu = 0.5
    assert budget.used_up()
