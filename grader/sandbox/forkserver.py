"""The pre-warmed fork server of batch grading, seen from the grader: it forks one fresh child
per submission (``worker.py --zygote`` is its other side)."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader.sandbox.processes import child_environment

WORKER = Path(__file__).with_name("worker.py")
#: how long a server may take to import its libraries before it forks (torch on a busy machine)
IMPORTS_SECONDS = 120.0


class ForkServer:
    """A pre-warmed worker (``worker.py --zygote``) that forks a fresh child per run.

    Used for batch grading, where starting an interpreter and importing NumPy for every
    submission would cost more than grading it. Each run is still its own process in its own
    session, with its own limits, environment, directory and tripwires; only the start-up is shared.
    The server never loads grader code, so a fork holds nothing of the grader's either.
    """

    def __init__(self, frameworks: tuple[str, ...] = (), *,
                 fork_of: ForkServer | None = None) -> None:
        """A new server that imports ``frameworks`` before it forks: a new interpreter, or, with
        ``fork_of``, a fork of that server which imports only what it has not (its answer is
        awaited: EOFError or OSError when it cannot)."""
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # no folder of its own: the server writes nothing, and each fork moves into its run's
        # directory (a folder made here outlived pool workers that end without exit handlers)
        self.home = tempfile.gettempdir()
        self.exits: dict[int, int] = {}
        #: the CPU time (seconds) of the processes it adopted and reaped, runs' orphans: told
        #: as it reaps them (its runs take turns, so what it reaps during a run is the run's)
        self.adopted_cpu = 0.0
        self.process: subprocess.Popen[bytes] | _ForkedServer
        try:
            if fork_of is not None:
                self.process = fork_of.fork_server(theirs.fileno(), frameworks)
            else:
                self.process = subprocess.Popen(
                    [sys.executable, "-I", "-B", str(WORKER), "--zygote",
                     str(theirs.fileno()), *frameworks],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, cwd=self.home,
                    env=child_environment(self.home, secrets.token_hex(8)),
                    pass_fds=(theirs.fileno(),), start_new_session=True)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.frameworks = frameworks
        self.socket = ours
        #: did its last run enter a pid namespace of its own? (then the next run's clean-up
        #: need not know which processes were here before it)
        self.contains_runs = False
        #: is it importing libraries before its next fork? (then that fork may take long)
        self.importing = bool(frameworks)

    def alive(self) -> bool:
        return self.process.poll() is None

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        import socket

        ready, _, _ = select.select([self.socket], [], [], max(0.0, timeout))
        if not ready:
            return None
        data, fds, _, _ = socket.recv_fds(self.socket, 1 << 16, 1)
        if not data:
            for fd in fds:
                os.close(fd)
            raise EOFError
        message = dict(json.loads(data))
        if message.get("op") == "exited":
            self.exits[int(message["pid"])] = int(message["code"])
        if message.get("op") == "adopted":
            self.adopted_cpu += float(message["seconds"])
        if message.get("op") == "server" and fds:
            message["pidfd"] = fds.pop()
        for fd in fds:  # (none is ever sent with anything else)
            os.close(fd)
        return message

    def _until(self, op: str, seconds: float, ident: str | None = None) -> dict[str, Any]:
        """The next answer ``op`` (to the request ``ident``, if given: on a server several
        processes take turns on, an answer may be left by one that died before reading it)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self._receive(deadline - time.monotonic())
            if message is None or message.get("op") != op:
                continue
            if ident is None or message.get("id") == ident:
                return message
            if "pidfd" in message:  # (its server sees its control socket close, and ends)
                os.close(message["pidfd"])
        raise EOFError(f"the fork server did not answer {op!r}")

    def spawn(self, cwd: Path, env: dict[str, str], fds: tuple[int, int, int],
              forbidden_roots: list[str], skip: list[str]) -> int:
        import socket

        request = {"op": "spawn", "cwd": str(cwd), "env": env, "forbidden_roots": forbidden_roots,
                   "skip": skip}
        socket.send_fds(self.socket, [json.dumps(request).encode()], list(fds))
        spawned = self._until("spawned", IMPORTS_SECONDS if self.importing else 10.0)
        self.importing = False
        return int(spawned["pid"])

    def fork_server(self, control_fd: int, imports: tuple[str, ...]) -> _ForkedServer:
        """Have this server fork a second one, which imports ``imports`` (those it has not yet)
        and then serves on the other end of ``control_fd``."""
        import socket

        ident = secrets.token_hex(8)
        request = {"op": "server", "names": [n for n in imports if n not in self.frameworks],
                   "id": ident}
        socket.send_fds(self.socket, [json.dumps(request).encode()], [control_fd])
        answer = self._until("server", IMPORTS_SECONDS if self.importing else 10.0, ident)
        self.importing = False
        if "pidfd" not in answer:
            raise EOFError("the fork server forked no server")
        return _ForkedServer(int(answer["pid"]), int(answer["pidfd"]))

    def hear(self) -> None:
        """Read what the server has told so far, without waiting (exits, adopted CPU)."""
        with contextlib.suppress(EOFError, OSError, ValueError):
            while self._receive(0.0) is not None:
                pass

    def wait(self, pid: int, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while pid not in self.exits:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                self._receive(remaining)
            except (EOFError, OSError):
                return None
        return self.exits.pop(pid)

    def warm(self, names: tuple[str, ...]) -> None:
        """Have the server import ``names`` before it forks again (not awaited: requests are
        handled in order)."""
        self.frameworks = names
        self.importing = True
        with contextlib.suppress(OSError):
            self.socket.send(json.dumps({"op": "warm", "names": list(names)}).encode())

    def sweep(self, contained: bool = False) -> None:
        """Have the server kill and reap what a finished run left adopted by it (``contained``:
        the run was in a pid namespace of its own, so only its own processes come back). Not
        awaited: the server handles requests in order, so the sweep is done before the next run
        starts."""
        self.exits.clear()
        with contextlib.suppress(OSError):
            self.socket.send(json.dumps({"op": "sweep", "contained": contained}).encode())

    def close(self) -> None:
        self.socket.close()
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()


class _ForkedServer:
    """The ``Popen``-like handle of a server forked by another server: not this process's
    child, so watched and killed through a pidfd (which no other process can come to name)."""

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid, self.pidfd = pid, pidfd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.pidfd], [], [], 0)[0]:
            self.returncode = -signal.SIGKILL  # (its parent server has its status)
            os.close(self.pidfd)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            select.select([self.pidfd], [], [], timeout)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
        return code


class Forked:
    """The ``Popen``-like handle of a child forked by the server."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid

    def wait(self, timeout: float | None = None) -> int:
        code = self.server.wait(self.pid, 5.0 if timeout is None else timeout)
        if code is None:
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 5.0)
        return code


#: do this process's runs fork from a server unless they say (``sandbox.run``'s
#: ``fork_server``)? Set by batch's workers, whose every run does
_forks_by_default = False
#: the frameworks every server imports before forking (a course's torch, TensorFlow or JAX)
_frameworks: tuple[str, ...] = ()
#: slow libraries that only the second server imports, for the students who import them
_libraries: tuple[str, ...] = ()
#: the servers of this process: the lean one (False) and the one with ``_libraries`` (True)
_servers: dict[bool, ForkServer] = {}
#: do the coming runs fork from the server with the slow libraries?
_with_libraries = False


def forks_by_default() -> bool:
    return _forks_by_default


def use_fork_server(enabled: bool = True) -> None:
    """Run each submission of this process that does not choose (``sandbox.run``'s
    ``fork_server``) in a fork of a pre-warmed server (batch grading) instead of a new
    interpreter. The server starts on first use and dies with this process."""
    global _forks_by_default
    _forks_by_default = enabled


@contextlib.contextmanager
def forking(enabled: bool) -> Iterator[None]:
    """Within the block, the runs that do not choose fork from a server (``enabled``) or
    start a new interpreter; the default before is restored after, whatever happens."""
    before = _forks_by_default
    use_fork_server(enabled)
    try:
        yield
    finally:
        use_fork_server(before)


def start() -> None:
    """Use the fork server from now on, and start it now (a pool worker's warm-up)."""
    use_fork_server(True)
    server()


def _imports(with_libraries: bool) -> tuple[str, ...]:
    return _frameworks + _libraries if with_libraries else _frameworks


def _warm_alive() -> None:
    for with_libraries, server in _servers.items():
        if server.alive() and server.frameworks != _imports(with_libraries):
            server.warm(_imports(with_libraries))


def warm_frameworks(names: tuple[str, ...]) -> None:
    """Have every server import these frameworks once, before its next fork (and every server
    started later, first thing)."""
    global _frameworks
    _frameworks = tuple(sorted(set(_frameworks) | set(names)))
    _warm_alive()


def fork_from(libraries: tuple[str, ...]) -> None:
    """Fork the coming runs from a server that has imported ``libraries`` too (slow libraries
    the submission imports), or from the lean server when there are none. A library loaded in
    a server makes every fork of it slower (scipy doubles a fork's cost), so only the students
    who import one are forked from the server that has it: a fork of the lean server, which
    imports each library once (no more than the first such student would have in their run)."""
    global _libraries, _with_libraries
    _with_libraries = bool(libraries)
    _libraries = tuple(sorted(set(_libraries) | set(libraries)))
    _warm_alive()


def _server(with_libraries: bool) -> ForkServer:
    server = _servers.get(with_libraries)
    if server is None or not server.alive():
        if server is not None:
            server.close()
        server = None
        with contextlib.suppress(EOFError, OSError):
            server = _fork_of_shared(with_libraries)
            if server is None and with_libraries:  # a fork of the lean server: NumPy and the
                server = ForkServer(_imports(True), fork_of=_server(False))  # frameworks are in
        server = _servers[with_libraries] = server or ForkServer(_imports(with_libraries))
        atexit.register(server.close)
    return server


class _Shared:
    """A lean server that the processes forked from the one that started it (a batch's pool
    workers) fork their own servers from, taking turns on its socket under ``lock``; watched
    through a pidfd, since it is not their child."""

    def __init__(self, server: ForkServer, lock: Any) -> None:
        self.server, self.lock, self.owner = server, lock, os.getpid()
        self.pidfd = os.pidfd_open(server.process.pid)

    def alive(self) -> bool:
        return not select.select([self.pidfd], [], [], 0)[0]


#: the servers shared with the processes this one forks: the lean one (False) and the one with
#: the slow libraries (True), if there are
_shared: dict[bool, _Shared] = {}


def _fork_of_shared(with_libraries: bool) -> ForkServer | None:
    """This process's lean server (or its server with the slow libraries) as a fork of the
    shared one, where there is one for it."""
    shared = _shared.get(with_libraries)
    if shared is None or shared.owner == os.getpid() or not shared.alive():
        return None
    # (a holder that died under the lock must not stop the others: they start their own)
    if not shared.lock.acquire(timeout=10.0):
        return None
    try:
        return ForkServer(_imports(with_libraries), fork_of=shared.server)
    finally:
        shared.lock.release()


def _share(server: ForkServer) -> _Shared | None:
    import multiprocessing

    try:
        return _Shared(server, multiprocessing.get_context("fork").Lock())
    except (AttributeError, OSError):  # (no pidfd_open: each worker starts its own)
        server.close()
        return None


@contextlib.contextmanager
def shared_with_forks(frameworks: tuple[str, ...] = ()) -> Iterator[None]:
    """Start a lean server now, with ``frameworks``, for the processes this one forks meanwhile
    (a batch's pool workers): each forks its own server from it, instead of starting an
    interpreter that imports NumPy (and the course's framework) again. It starts up while this
    process goes on (preparing what the workers inherit), and ends with the context."""
    try:
        server = ForkServer(frameworks)
    except OSError:  # (each worker starts its own server, and says what failed)
        yield
        return
    shared = _share(server)
    if shared is None:
        yield
        return
    _shared[False] = shared
    try:
        yield
    finally:
        for shared in reversed(list(_shared.values())):
            os.close(shared.pidfd)
            shared.server.close()
        _shared.clear()


def share_libraries(libraries: tuple[str, ...]) -> None:
    """Within :func:`shared_with_forks`, also share a server with these slow libraries (those
    a batch's students import), forked from the shared lean one: each worker forks its second
    server from it, and a class imports scipy once, not once per worker. It imports them while
    the workers start."""
    lean = _shared.get(False)
    if not libraries or lean is None or lean.owner != os.getpid() or True in _shared:
        return
    try:
        server = ForkServer(lean.server.frameworks + libraries, fork_of=lean.server)
    except (EOFError, OSError):  # (each worker forks its own from its lean server)
        return
    shared = _share(server)
    if shared is not None:
        _shared[True] = shared


def server_pids() -> set[int]:
    """The pids of this process's servers (a run's clean-up must not take one of them, the
    second server a child of the first, for something the run left)."""
    return {server.process.pid for server in _servers.values() if server.alive()}


def server() -> ForkServer:
    """The server the next run forks from (started, or restarted, as needed)."""
    return _server(_with_libraries)


def current() -> ForkServer | None:
    """The server the next run that does not choose forks from; None where it starts a new
    interpreter."""
    return server() if _forks_by_default else None
