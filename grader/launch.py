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


def main() -> None:
    args = sys.argv[1:]
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
