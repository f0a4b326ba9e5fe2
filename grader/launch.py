"""The ``attention-grader`` command's entry point.

For a command that grades one submission, the worker interpreter is started before anything
else, so that it loads NumPy while this process imports the command line and the grader
(``sandbox.spawn.head_start``); and once the report is written the process ends without tearing
down every module one by one (the exit handlers still run, the output is flushed): with NumPy
loaded, that teardown took about a tenth of a check's time.
"""

from __future__ import annotations

import atexit
import os
import sys

#: the commands that grade exactly one submission in a fresh worker
ONE_SUBMISSION = frozenset({"grade", "check"})


#: the commands whose --seed falls back to the environment variable (gradescope-zip's is the
#: seed it writes into the bundle: no submission runs then)
SEEDED = frozenset({"grade", "check", "batch"})
#: the environment variable the seed moves to (``grader.config.SEED_VARIABLE``; not imported:
#: this module loads before the grader)
SEED_VARIABLE = "ATTENTION_GRADER_SEED"


def seed_off_the_command_line(args: list[str]) -> tuple[list[str], str | None]:
    """``args`` without ``--seed N`` / ``--seed=N``, and the seed given there (None when none).

    A process's command line is readable by every user of the machine in ``/proc``: a hidden
    seed must not stay on the grader's own, where a submission without a pid namespace of its
    own could read it."""
    kept: list[str] = []
    seed = None
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            kept += [arg, *rest]
            break
        if arg == "--seed":
            seed = next(rest, None)
            if seed is None:
                kept.append(arg)  # the command line reports the missing value
        elif arg.startswith("--seed="):
            seed = arg.split("=", 1)[1]
        else:
            kept.append(arg)
    return kept, seed


def main() -> None:
    args = sys.argv[1:]
    kept, seed = seed_off_the_command_line(args)
    if seed is not None and args[0] in SEEDED:  # the same command again, the seed in its environment only
        os.environ[SEED_VARIABLE] = seed
        os.execv(sys.executable, [sys.executable, "-m", "grader", *kept])
    one_submission = bool(args) and args[0] in ONE_SUBMISSION and not {"--help", "-h"} & set(args)
    if one_submission:
        from grader.sandbox.spawn import head_start

        head_start()
    from grader.cli import main as command

    if not one_submission:
        command()
        return
    try:
        command()
        status: object = 0
    except SystemExit as done:
        status = done.code
    _exit_now(status)


def _exit_now(status: object) -> None:
    """Leave as ``sys.exit(status)`` would, minus the interpreter's module teardown."""
    if status is None:
        status = 0
    elif not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 1
    os._exit(status)
