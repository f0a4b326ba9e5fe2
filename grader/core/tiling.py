"""The ``tiling`` check of tiled attention (SPEC, "What tiled means for grading"): a check, not
a misconception, worth a small share of the points. The function is called once more, after
every output probe and with its own time limit, on n = m = 2048, d = d_v = 16 with 128 x 128
tiles (non-causal; the backward with the reference O, L and a random upstream gradient), and
the peak of what it allocates during that call must stay below 8 MiB, a quarter of one float64
2048 x 2048 matrix: a tiled computation holds a few tiles (a stripe of one query tile against
every key, 2 MiB, passes), one that materialises the n x m scores holds 32 MiB or more. A
course's code that fixes its tile sizes inside (CS336: 16 x 16) or chooses its own runs those
instead, and the message says which tiles ran.

NumPy's buffers are seen by ``tracemalloc``; torch's are not, and code that uses such a
framework is called in a fork of the process that runs it, whose peak resident set grows from
the fork on (``grader.sandbox.peak``): its growth during the call is held to the same bound. Where
nothing could be measured (no resident set, a call that failed or took too long, a way of
grading that does not measure) the check says so and is scored as passed: it never takes points
for what it could not see.
"""

from __future__ import annotations

import functools
from typing import Any

from grader.core.assignments import Assignment
from grader.core.probes import Maker
from grader.model import CheckResult, Probe

CHECK_ID = "tiling"
#: the measured call's sizes
LENGTH = 2048
WIDTH = 16
BLOCK = 128
#: the bound on the call's peak allocation: a quarter of one float64 LENGTH x LENGTH matrix
BOUND_BYTES = 8 << 20
#: the measured call's own time limit (CPU seconds), apart from the output probes'
SECONDS = 10.0
TITLE = "The scores are computed tile by tile"
BANK = ("B-2",)

Measurement = dict[str, Any] | str | None


def wanted(assignment: Assignment) -> bool:
    """Does the assignment's rubric have the check, and its task a call to measure?"""
    return assignment.task.tiling_call is not None and any(
        check["id"] == CHECK_ID for check in assignment.rubric()["checks"])


@functools.lru_cache(maxsize=8)
def measured_probe(task_name: str, seed: int) -> Probe:
    """The task's measured call (made once per task and seed in a process)."""
    from grader.core.tasks import task

    make = task(task_name).tiling_call
    assert make is not None
    probe = make(Maker(seed, task_name), LENGTH, WIDTH, BLOCK)
    for value in probe.args:
        if hasattr(value, "setflags"):
            value.setflags(write=False)
    return probe


def probes_of(assignment: Assignment, seed: int) -> list[Probe]:
    """The measured calls of the assignment (none when it has no tiling check)."""
    return [measured_probe(assignment.task.name, seed)] if wanted(assignment) else []


def _mib(size: float) -> str:
    return f"{size / (1 << 20):.1f} MiB"


#: the tiles the measured call asks for, as a report says them
ASKED = f"{BLOCK} x {BLOCK} tiles"


def tiles_run(assignment: Assignment) -> str:
    """The tiles the measured call really runs with, as a report says them: the ones it asks
    for, unless the course's code fixes its tile sizes inside (CS336: 16 x 16, whatever it is
    asked) or takes no tile sizes at all and chooses its own."""
    blocks = [name for name in assignment.arg_names if name.startswith("block")]
    fixed = dict(assignment.interface.fixed)
    if blocks and all(name in fixed for name in blocks):
        return f"the course's fixed {' x '.join(str(fixed[name]) for name in blocks)} tiles"
    parameters = assignment.interface.parameters
    if blocks and assignment.through_interface and parameters and not any(
            name in parameters or name in fixed for name in blocks):
        return "the tiles the code chooses itself"
    return ASKED


def _sizes(tiles: str) -> str:
    return (f"n = m = {LENGTH}, d = {WIDTH}, {tiles}; one float64 {LENGTH} x "
            f"{LENGTH} matrix is {_mib(LENGTH * LENGTH * 8)}")


def verdict(measurement: Measurement, tiles: str = ASKED) -> tuple[bool, bool, str]:
    """(measured, passed, message) of one measurement; ``tiles``: the tiles the call ran with
    (``tiles_run``)."""
    if measurement is None:
        return False, True, ("not measured: this way of grading does not measure what the call "
                             "allocates; scored as passed.")
    if isinstance(measurement, str):
        return False, True, f"not decided: {measurement}; scored as passed."
    traced = float(measurement.get("traced_peak") or 0)
    frameworks = [str(f) for f in measurement.get("frameworks") or ()]
    growth = measurement.get("resident_growth")
    if traced > BOUND_BYTES:
        return True, False, _materialises(f"the allocations traced during the call peaked at "
                                          f"{_mib(traced)}", tiles)
    if frameworks:
        if not isinstance(growth, (int, float)):
            why = str(measurement.get("why_not") or "the grader could not read the call's "
                      "resident memory")
            return False, True, (f"not measured: {', '.join(frameworks)} allocates outside what "
                                 f"Python traces, and {why}; scored as passed.")
        if growth > BOUND_BYTES:
            # (no number: a resident set's growth varies a little from one process to the next,
            # and the report must read the same in the sandbox and in the notebook)
            return True, False, _materialises(f"the process's resident memory grew by more "
                                              f"than {_mib(BOUND_BYTES)} during the call", tiles)
        return True, True, passed_message(tiles)
    return True, True, passed_message(tiles)


def passed_message(tiles: str = ASKED) -> str:
    """What a passed check says (no number: it is told the same wherever it was measured)."""
    return (f"one call with {LENGTH} queries and {LENGTH} keys ({WIDTH} features, {tiles}) "
            f"allocated less than {BOUND_BYTES >> 20} MiB at its peak: the scores are computed "
            "tile by tile.")


def _materialises(what: str, tiles: str) -> str:
    return (f"materialises the n x m score matrix: {what} ({_sizes(tiles)}), more than the "
            f"{_mib(BOUND_BYTES)} a tiled computation needs. Compute S, P (and dS) one "
            "(block_q, block_k) tile at a time inside the loops instead of for all keys at once.")


def check(spec: dict[str, Any], measurement: Measurement, tiles: str = ASKED) -> CheckResult:
    """The rubric's tiling check, decided from the measured call (run with ``tiles``)."""
    points = float(spec["points"])
    _, passed, message = verdict(measurement, tiles)
    return CheckResult(spec["id"], spec["category"], passed, points if passed else 0.0, points,
                       f"{TITLE}: {message}", BANK)
