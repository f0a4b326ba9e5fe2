"""Stage 2, running the submission isolated: ``run`` (the session) is the entry point.

``session.py`` drives a run, ``child.py`` is one child process seen from the grader,
``forkserver.py`` the pre-warmed server of batch grading, ``processes.py`` ends and reaps them,
``wire.py`` is the channel's format (both sides). Child side, loaded by path and never importing
the grader: ``worker.py`` (runs the submission), ``confine.py`` (its isolation), ``returns.py``
(return values to arrays, shared with the notebook check).
"""

from grader.model import Submission
from grader.sandbox.child import SKIP_LAYERS_VARIABLE
from grader.sandbox.forkserver import start as start_fork_server
from grader.sandbox.forkserver import use_fork_server
from grader.sandbox.session import Planner, run

__all__ = ["SKIP_LAYERS_VARIABLE", "Planner", "Submission", "run", "start_fork_server",
           "use_fork_server"]
