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


def report_the_run(request_fd: int, result_fd: int) -> None:
    """The stand-in worker: what its run sees, written to the result pipe; with a request
    ``leave``, a process it starts and leaves sleeping in a session of its own."""
    import ctypes

    request = json.loads(os.read(request_fd, 1 << 16) or b"{}")
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
            "stdin": os.readlink("/proc/self/fd/0"), "left": left}
    os.write(result_fd, json.dumps(seen).encode())
    os._exit(int(request.get("code", 0)))


class Server:
    """The zygote's loop running in a fork of this process, and our end of its control socket."""

    def __init__(self) -> None:
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
                zygote.serve_forks(theirs.detach(), report_the_run, lambda limits: None)
            finally:
                os._exit(0)
        theirs.close()
        self.control = ours

    def ask(self, request: dict[str, Any], fds: list[int] = []) -> None:  # noqa: B006
        socket.send_fds(self.control, [json.dumps(request).encode()], fds)

    def answer(self, op: str, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([self.control], [], [], deadline - time.monotonic())[0]:
                message = json.loads(self.control.recv(1 << 16))
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


def run(server: Server, workdir: Path, env: dict[str, str],
        request: dict[str, Any]) -> tuple[int, dict[str, Any], bytes, int]:
    """One run forked by the server: its pid, what it saw, what it printed, its exit code."""
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
        code = int(server.answer("exited")["code"])
        return pid, seen, os.pread(output, 1 << 10, 0), code
    finally:
        for fd in (request_write, result_read, output):
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
