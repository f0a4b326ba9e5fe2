"""Stage 2, running the submission isolated: ``run`` (the session) is the entry point.

``session.py`` drives a run, ``child.py`` is one child process seen from the grader,
``spawn.py`` starts a worker (ahead of time for a one-submission command), ``forkserver.py`` the
pre-warmed server of batch grading, ``processes.py`` ends and reaps them, ``wire.py`` is the
channel's format (both sides). Child side, loaded by path and never importing the grader:
``worker.py`` (runs the submission), ``confine.py`` (its isolation), ``returns.py`` (return
values to arrays, shared with the notebook check), ``interface.py`` (a course's conventions),
``trace.py`` (the values of one traced call). Names load on first use, so that ``spawn`` can
start a worker before the rest of the grader is imported.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SKIP_LAYERS_VARIABLE", "Planner", "Submission", "fork_from", "forking", "run",
           "share_libraries", "shared_fork_server", "start_fork_server", "use_fork_server",
           "warm_frameworks"]


def __getattr__(name: str) -> Any:
    if name in ("run", "Planner"):
        from grader.sandbox import session

        return getattr(session, name)
    if name == "SKIP_LAYERS_VARIABLE":
        from grader.sandbox.child import SKIP_LAYERS_VARIABLE

        return SKIP_LAYERS_VARIABLE
    if name in ("start_fork_server", "use_fork_server", "forking", "warm_frameworks",
                "fork_from", "shared_fork_server", "share_libraries"):
        from grader.sandbox import forkserver

        return {"start_fork_server": forkserver.start, "use_fork_server":
                forkserver.use_fork_server, "forking": forkserver.forking,
                "warm_frameworks": forkserver.warm_frameworks,
                "fork_from": forkserver.fork_from,
                "shared_fork_server": forkserver.shared_with_forks,
                "share_libraries": forkserver.share_libraries}[name]
    if name == "Submission":
        from grader.model import Submission

        return Submission
    raise AttributeError(f"module 'grader.sandbox' has no attribute {name!r}")
