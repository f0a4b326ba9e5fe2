"""One child process, seen from the grader: started fresh or forked by the server, given the
submission and its confinement, then read frame by frame with deadlines."""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from grader.config import Limits
from grader.model import Submission, printable_name
from grader.sandbox import forkserver, wire
from grader.sandbox.processes import (
    child_environment,
    end_contained_run,
    kill_run,
    own_children,
    reap_adopted,
    settle_and_reap,
    start_ticks,
    tree_cpu_seconds,
)
from grader.sandbox.spawn import Spawned, output_file, spawn_worker

PACKAGE_ROOTS = (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[2] / "reference")
#: the background threads that reap a finished child (``settle_and_reap``)
REAPER_THREAD = "attention-grader-reaper"
#: layers not to try (comma-separated names, or ``namespaces``): for testing the fallbacks
SKIP_LAYERS_VARIABLE = "ATTENTION_GRADER_SKIP_LAYERS"


#: the unprivileged uids of runs (as root): one per run, from its child's pid, so that runs at
#: the same time never share a uid (nor with the grader or the fork server), and far above the
#: uids of real users
RUN_UID_BASE = 1_500_000_000


def run_uid(pid: int) -> int:
    return RUN_UID_BASE + pid


def forbidden_roots() -> list[str]:
    return list(_forbidden_roots())


@functools.cache
def _forbidden_roots() -> tuple[str, ...]:  # (looked up once per process)
    roots = [str(p) for p in PACKAGE_ROOTS if p.is_dir()]
    tests = PACKAGE_ROOTS[0].parent / "tests"
    if (PACKAGE_ROOTS[0].parent / "pyproject.toml").is_file() and tests.is_dir():
        roots.append(str(tests))
    return tuple(roots)


def skipped_layers() -> list[str]:
    """The layers not to try (a test of the modes with fewer layers says which)."""
    return [x for x in os.environ.get(SKIP_LAYERS_VARIABLE, "").split(",") if x]


def signal_name(signum: int) -> str:
    """A signal as a report names it: a standard signal by its name, any other (real-time,
    or one the C library keeps for itself, which Python's ``signal.Signals`` does not name)
    by its number."""
    rtmin, rtmax = getattr(signal, "SIGRTMIN", 0), getattr(signal, "SIGRTMAX", -1)
    if rtmin <= signum <= rtmax:
        offset = "SIGRTMIN" if signum == rtmin else (
            "SIGRTMAX" if signum == rtmax else f"SIGRTMIN+{signum - rtmin}")
        return f"signal {signum} ({offset})"
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Child:
    """One worker process and its two pipes."""

    def __init__(self, submission: Submission, workdir: Path, newroot: Path,
                 limits: Limits, spawned: Spawned | None = None, *,
                 server: forkserver.ForkServer | None = None) -> None:
        """A child forked by ``server``, else the worker ``spawned`` ahead, else a new one
        (``server`` is started before: the processes to spare include it)."""
        self.nonce = secrets.token_hex(16)
        self.limits = limits
        roots = forbidden_roots()
        self.server = server
        self.process: subprocess.Popen[bytes] | forkserver.Forked
        #: the run's processes are all inside a pid namespace of its own (its child said so
        #: before any student code ran): killing its first process ends every one of them
        self.contained = False
        #: it has a root of its own, its working directory a file system of its own inside it
        #: (its child said so before any student code ran): it writes nothing in the run's folder
        self.own_root = False
        self.spared: set[int] | None = None
        #: the thread that reaps a started (not forked) child once it is stopped
        self.reaper: threading.Thread | None = None
        if self.server is not None:
            self.marker = secrets.token_hex(8)
            # the processes to spare are read only where a clean-up may have to look for strays
            self.spared = (None if self.server.contains_runs
                           else own_children() | forkserver.server_pids())
            request_read, self.request_write = os.pipe()
            self.result_read, result_write = os.pipe()
            #: what the child prints (read back with ``spawn.printed``; the run closes it)
            self.output = output_file()
            pid = self.server.spawn(workdir, child_environment(str(workdir), self.marker),
                                    (request_read, result_write, self.output),
                                    roots, skipped_layers())
            self.process = forkserver.Forked(self.server, pid)
            os.close(request_read)
            os.close(result_write)
        else:
            started = spawned or spawn_worker(workdir)
            self.process, self.marker, self.spared = started.process, started.marker, started.spared
            self.output = started.output
            self.request_write, self.result_read = started.request_write, started.result_read
        self.uid = run_uid(self.process.pid)
        #: when it started (``boot_ticks``): what the grader or the server adopts that started
        #: since is this run's (runs take turns)
        self.started: int | None = None
        #: the CPU time of its orphans that the grader reaped (started, not forked, children)
        self.reaped_cpu = 0.0
        #: what the server had told of the orphans it reaped before this run
        self.adopted_before = self.server.adopted_cpu if self.server is not None else 0.0
        self.reader = wire.FrameReader(limits.max_result_mb << 20)
        self.pending: list[tuple[dict[str, Any], bytes]] = []
        setup = {
            "type": "setup",
            "nonce": self.nonce,
            "kind": submission.kind,
            "sources": list(submission.sources),
            "filename": printable_name(submission.path.name),  # tracebacks say attention.py, not a temp path
            "limits": limits.for_child(),
            "forbidden_roots": roots,
            "confine": {
                "workdir": str(workdir),
                "newroot": str(newroot),
                "forbidden_roots": roots,
                "require_fs_isolation": not limits.unsafe_no_fs_isolation,
                "skip": skipped_layers(),
                "uid": self.uid,
                "private_paths": list(limits.private_paths),
                "disk_bytes": limits.disk_mb << 20,
            },
        }
        self.send(wire.encode(setup))

    def send(self, data: bytes) -> None:
        """Write ``data`` to the child without waiting on it: what the pipe takes now is
        written here, the rest by a thread (a child that stops reading blocks only that)."""
        view = memoryview(data)
        try:
            os.set_blocking(self.request_write, False)
            view = view[os.write(self.request_write, view):]
        except BlockingIOError:
            pass
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                os.set_blocking(self.request_write, True)
        if not view:
            return

        def write_rest(rest: memoryview) -> None:
            try:
                while rest:
                    rest = rest[os.write(self.request_write, rest):]
            except OSError:
                pass

        threading.Thread(target=write_rest, args=(view,), daemon=True).start()

    def next_frame(self, deadline: float) -> tuple[dict[str, Any], bytes] | None:
        """The next frame of this run; None on timeout; EOFError when the child is gone."""
        while not self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.result_read], [], [], remaining)
            if not ready:
                return None
            data = os.read(self.result_read, 1 << 20)
            if not data:
                raise EOFError
            self.pending.extend(self.reader.feed(data))
        header, blob = self.pending.pop(0)
        if header.get("nonce") != self.nonce:
            raise wire.ProtocolError("frame without this run's nonce")
        return header, blob

    def cpu_seconds(self) -> float:
        """The CPU time this child and everything it started have used so far: its
        descendants (running, or reaped by them), and, where its orphans come to the grader
        or the fork server (no pid namespace), those adopted (running, or reaped by them)."""
        pid = self.process.pid
        if self.started is None:
            self.started = start_ticks(pid)
        if self.contained or self.started is None:
            return tree_cpu_seconds(pid)  # (every process it started is in its namespace)
        spared = frozenset({pid, *forkserver.server_pids()})
        if self.server is not None:
            self.server.hear()  # (what it has reaped of this run's orphans, so far)
            adopter = self.server.process.pid
            reaped = self.server.adopted_cpu - self.adopted_before
        else:
            adopter = os.getpid()
            self.reaped_cpu += reap_adopted(self.started, spared)
            reaped = self.reaped_cpu
        return reaped + tree_cpu_seconds(pid, frozenset({adopter}), self.started, spared)

    def death_kind(self) -> tuple[str, str]:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "crashed", "the submission's process stopped answering"
        if code in (-signal.SIGXCPU, -signal.SIGKILL):
            return "timeout", "the submission used up its CPU time"
        if code < 0:
            return "crashed", f"the submission's process was killed by {signal_name(-code)}"
        return "crashed", f"the submission's process exited with status {code} during the call"

    def confined_as(self, layers: list[str]) -> None:
        """What the child said of its layers, before any student code ran."""
        self.contained = "pid-namespace" in layers
        self.own_root = "read-only-root" in layers
        if self.server is not None:
            self.server.contains_runs = self.contained

    def stop(self) -> None:
        # everything is killed before this returns; the dying are reaped in the background:
        # the kernel takes a moment (a fifth of a second here) to take down the namespaces
        # they leave, and no grading need wait for it
        if self.contained:  # its first process's death takes down its namespace, and all in it
            end_contained_run(self.process.pid)
        else:
            adopters = (frozenset({self.server.process.pid}) if self.server is not None
                        else frozenset())
            spared = own_children() if self.spared is None else self.spared
            kill_run(self.process.pid, self.marker, spared, settle=False, uid=self.uid,
                     adopters=adopters)
        if self.server is not None:  # the server reaps its forks; it is told to sweep up
            self.server.sweep(self.contained)
        else:
            self.reaper = threading.Thread(target=settle_and_reap,
                                           args=(self.process, self.process.pid),
                                           name=REAPER_THREAD, daemon=True)
            self.reaper.start()
        for fd in (self.request_write, self.result_read):
            try:
                os.close(fd)
            except OSError:
                pass
