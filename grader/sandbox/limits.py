"""Limits, environment and process hygiene for the child: what it may use and how it is ended."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
MARKER_VARIABLE = "ATTENTION_GRADER_RUN"
#: variables kept from the grader's environment; everything else (tokens, credentials) is dropped
KEPT_VARIABLES = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")


@dataclass(frozen=True)
class Limits:
    """Budgets for one submission. Times in seconds; the defaults suit one attention assignment."""

    import_seconds: float = 15.0
    call_seconds: float = 5.0
    total_seconds: float = 30.0
    cell_seconds: float = 10.0
    memory_mb: int = 3072
    file_size_mb: int = 64
    open_files: int = 256
    max_restarts: int = 2
    max_result_mb: int = 64

    def for_child(self) -> dict[str, int | float]:
        return {
            "memory_bytes": self.memory_mb << 20,
            "fsize_bytes": self.file_size_mb << 20,
            "nofile": self.open_files,
            "cpu_seconds": int(self.total_seconds) + 5,
            "cell_seconds": self.cell_seconds,
        }

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


DEFAULT_LIMITS = Limits()


def child_environment(home: str, marker: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in KEPT_VARIABLES if key in os.environ}
    env.update(
        PATH="/usr/bin:/bin",
        HOME=home,
        TMPDIR=home,
        PYTHONHASHSEED="0",
        PYTHONDONTWRITEBYTECODE="1",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        NUMEXPR_NUM_THREADS="1",
        VECLIB_MAXIMUM_THREADS="1",
        MPLBACKEND="Agg",
        **{MARKER_VARIABLE: marker},
    )
    env.setdefault("LANG", "C.UTF-8")
    return env


def become_subreaper() -> bool:
    """Make orphaned descendants (setsid daemons) children of this process, so they can be killed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _proc_status(pid: int) -> tuple[int, int] | None:
    """(parent pid, session id) of a live (not zombie) process, from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[3])


def _carries_marker(pid: int, marker: str) -> bool:
    try:
        return f"{MARKER_VARIABLE}={marker}".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def stray_processes(session: int, marker: str, spared: set[int]) -> list[int]:
    """Processes left by one run: in its session, adopted by us, or carrying its marker."""
    me = os.getpid()
    found = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == me or pid in spared:
            continue
        status = _proc_status(pid)
        if status is None:
            continue
        parent, sid = status
        if sid == session or parent == me or _carries_marker(pid, marker):
            found.append(pid)
    return found


def own_children() -> set[int]:
    """The processes that are children of this one now (spared by ``kill_run``)."""
    me = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return set()
    return {pid for pid in pids if (_proc_status(pid) or (0, 0))[0] == me}


def kill_run(pid: int, marker: str, spared: set[int]) -> None:
    """SIGKILL the child's process group and every process the run left behind; reap ours."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    killed: set[int] = set()
    for _ in range(50):
        strays = stray_processes(pid, marker, spared | {pid})
        if not strays:
            break
        for stray in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(stray, signal.SIGKILL)
        killed.update(strays)
        _reap(killed)
        time.sleep(0.002)
    _reap(killed)


def _reap(pids: set[int]) -> None:
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)
