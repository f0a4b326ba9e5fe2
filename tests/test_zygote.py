"""What the fork server's loop (``grader/sandbox/zygote.py``) promises each run it forks, tested
on the loop itself: loaded by path (as ``worker.py --zygote`` loads it) in a forked process of
this test, with a stand-in for the worker's ``serve`` that reports what the run found."""

from __future__ import annotations

import importlib.util
import json
import os
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SANDBOX = Path(__file__).resolve().parents[1] / "grader" / "sandbox"


def load_zygote() -> Any:
    spec = importlib.util.spec_from_file_location("_ag_zygote_test", SANDBOX / "zygote.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report_the_run(request_fd: int, result_fd: int, entered: list[str] | None = None) -> None:
    """The stand-in worker: what its run sees, written to the result pipe; with a request
    ``leave``, a process it starts and leaves sleeping in a session of its own; with
    ``hold_mb``, that much memory held (a run slow to die)."""
    import ctypes

    request = json.loads(os.read(request_fd, 1 << 16) or b"{}")
    held = bytearray(int(request.get("hold_mb", 0)) << 20)
    for page in range(0, len(held), 4096):
        held[page] = 1
    left = None
    if request.get("leave"):
        left = os.fork()
        if left == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
    os.write(1, b"printed by the run\n")
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    seen = {"environ": dict(os.environ), "c_home": (libc.getenv(b"HOME") or b"").decode(),
            "c_server_only": libc.getenv(b"SERVER_ONLY") is not None,
            "cwd": os.getcwd(), "session": os.getsid(0) == os.getpid(),
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
            "stdin": os.readlink("/proc/self/fd/0"), "left": left, "entered": entered,
            "network": os.readlink("/proc/self/ns/net")}
    os.write(result_fd, json.dumps(seen).encode())
    if request.get("stay"):
        os.read(request_fd, 1)  # (until the test closes the request pipe)
    os._exit(int(request.get("code", 0)))


class Server:
    """The zygote's loop running in a fork of this process, and our end of its control socket."""

    def __init__(self, namespaces: Any = None) -> None:
        zygote = load_zygote()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        os.environ["SERVER_ONLY"] = "1"  # (in the server's environment, not the run's)
        try:
            self.pid = os.fork()
        finally:
            del os.environ["SERVER_ONLY"]
        if self.pid == 0:
            try:
                ours.close()
                zygote.serve_forks(theirs.detach(), report_the_run, lambda limits: None,
                                   namespaces=namespaces)
            finally:
                os._exit(0)
        theirs.close()
        self.control = ours
        #: every answer read, in order
        self.heard: list[dict[str, Any]] = []

    def ask(self, request: dict[str, Any], fds: list[int] = []) -> None:  # noqa: B006
        socket.send_fds(self.control, [json.dumps(request).encode()], fds)

    def answer(self, op: str, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([self.control], [], [], deadline - time.monotonic())[0]:
                message = json.loads(self.control.recv(1 << 16))
                self.heard.append(message)
                if message["op"] == op:
                    return dict(message)
        raise TimeoutError(op)

    def close(self) -> None:
        self.control.close()
        os.waitpid(self.pid, 0)


@pytest.fixture
def server() -> Iterator[Server]:
    started = Server()
    yield started
    started.close()


def start(server: Server, workdir: Path, env: dict[str, str],
          request: dict[str, Any]) -> tuple[int, dict[str, Any], int, int]:
    """Start one run forked by the server: its pid, what it saw, its request pipe and its
    output (the caller closes both)."""
    request_read, request_write = os.pipe()
    result_read, result_write = os.pipe()
    output = os.memfd_create("run-output")
    try:
        server.ask({"op": "spawn", "cwd": str(workdir), "env": env}, [request_read, result_write,
                                                                       output])
        os.close(request_read)
        os.close(result_write)
        pid = int(server.answer("spawned")["pid"])
        os.write(request_write, json.dumps(request).encode())
        seen = json.loads(os.read(result_read, 1 << 16))
    except BaseException:
        for fd in (request_write, output):
            os.close(fd)
        raise
    finally:
        os.close(result_read)
    return pid, seen, request_write, output


def run(server: Server, workdir: Path, env: dict[str, str],
        request: dict[str, Any]) -> tuple[int, dict[str, Any], bytes, int]:
    """One run forked by the server: its pid, what it saw, what it printed, its exit code."""
    pid, seen, request_write, output = start(server, workdir, env, request)
    try:
        code = int(server.answer("exited")["code"])
        return pid, seen, os.pread(output, 1 << 10, 0), code
    finally:
        for fd in (request_write, output):
            os.close(fd)


def test_a_run_has_exactly_the_environment_given(server: Server, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin", "MARK": "run-1"}
    _, seen, _, _ = run(server, tmp_path, env, {})
    assert seen["environ"] == env
    assert seen["c_home"] == str(tmp_path) and not seen["c_server_only"]  # (C's view too)


def test_a_run_is_a_session_of_its_own_in_its_folder_with_only_its_fds(
        server: Server, tmp_path: Path) -> None:
    pid, seen, printed, code = run(server, tmp_path, {"HOME": "/"}, {"code": 3})
    assert seen["cwd"] == str(tmp_path) and seen["session"]
    assert seen["stdin"] == "/dev/null" and len(seen["fds"]) == 6  # 0-2, two pipes, listdir's
    assert printed == b"printed by the run\n" and code == 3
    assert pid not in (os.getpid(), server.pid)


def test_what_a_run_leaves_is_swept(server: Server, tmp_path: Path) -> None:
    _, seen, _, _ = run(server, tmp_path, {"HOME": "/"}, {"leave": True})
    left = seen["left"]
    assert alive(left)  # (the run has ended, its process lives on: adopted by the server)
    server.ask({"op": "sweep"})
    server.answer("swept")
    deadline = time.monotonic() + 5
    while alive(left) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(left)


def test_the_server_ends_when_its_control_socket_closes(tmp_path: Path) -> None:
    server = Server()
    run(server, tmp_path, {"HOME": "/"}, {})
    server.control.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        done, _ = os.waitpid(server.pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.02)
    os.kill(server.pid, 9)
    os.waitpid(server.pid, 0)
    raise AssertionError("the server outlived its control socket")


def alive(pid: int) -> bool:
    """Is ``pid`` (a process this test made) still running (a zombie is not)?"""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_run_starts_only_when_the_one_before_is_gone(server: Server, tmp_path: Path) -> None:
    """A run killed while it holds much memory (so it takes a while to die) is reaped before
    the next run is forked: nothing of it (files, sockets, memory) is left when the next
    starts. The grader kills the run, then asks for a sweep, then for the next run."""
    import signal

    first, _, request_write, output = start(server, tmp_path, {"HOME": "/"},
                                            {"hold_mb": 600, "stay": True})
    try:
        os.kill(first, signal.SIGKILL)
        server.ask({"op": "sweep"})
        pid, _, second_write, second_output = start(server, tmp_path, {"HOME": "/"}, {})
        os.close(second_write)
        os.close(second_output)
    finally:
        os.close(request_write)
        os.close(output)
    server.answer("exited")  # (the second's)
    told = [(m["op"], m.get("pid")) for m in server.heard if m["op"] in ("exited", "spawned")]
    assert told.index(("exited", first)) < told.index(("spawned", pid)), told


def test_each_run_has_a_network_namespace_of_its_own(tmp_path: Path) -> None:
    """Where the server makes each run's pid namespace (root), each run has its own network
    namespace too: two runs at once (as two runs one after the other, the first dying) see
    different ones, and neither is the server's."""
    confine = load_by_path_confine()
    namespaces = confine.RunNamespaces()
    server = Server(namespaces)
    try:
        first, seen_first, first_write, first_output = start(server, tmp_path, {"HOME": "/"},
                                                             {"stay": True})
        try:
            _, seen_second, second_write, second_output = start(server, tmp_path,
                                                                {"HOME": "/"}, {"stay": True})
            os.close(second_write)
            os.close(second_output)
        finally:
            os.close(first_write)
            os.close(first_output)
    finally:
        server.close()
    if seen_first["entered"] is None or "network-namespace" not in seen_first["entered"]:
        pytest.skip("the server cannot make a run's namespaces here (not root, or refused)")
    assert seen_first["network"] != seen_second["network"]
    assert os.readlink("/proc/self/ns/net") not in (seen_first["network"],
                                                    seen_second["network"])


def load_by_path_confine() -> Any:
    spec = importlib.util.spec_from_file_location("_ag_confine_zygote_test",
                                                  SANDBOX / "confine.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
