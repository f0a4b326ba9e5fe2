"""Stage 2: run the submission in a disposable child process and collect raw arrays.

The parent (this module) never imports or executes student code. It starts ``worker.py`` in a new
session with a scrubbed environment, a fresh temporary directory and resource limits, sends it the
probe inputs, and reads one frame per call from a single result pipe, with a wall-clock deadline
for the import and for each call. A call that hangs or crashes costs that call: the child is
killed (with its whole session and anything it left behind) and a new one continues with the
remaining probes, within the total budget.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.model import CallOutcome, GraderError, Probe, RunInfo, printable_name
from grader.sandbox import wire
from grader.sandbox.limits import (
    DEFAULT_LIMITS,
    Limits,
    become_subreaper,
    boot_ticks,
    child_environment,
    kill_run,
    own_children,
    reap_zombies,
    remove_leftovers,
)

WORKER = Path(__file__).with_name("worker.py")
UNPRIVILEGED_ID = 65534  # the child's user after the uid drop (confine.py)
PACKAGE_ROOTS = (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[2] / "reference")
WANTED_FUNCTIONS = ("softmax", "scaled_dot_product_attention", "multi_head_attention")
OUTPUT_EXCERPT_BYTES = 4096
#: layers not to try (comma-separated names, or ``namespaces``): for testing the fallbacks
SKIP_LAYERS_VARIABLE = "ATTENTION_GRADER_SKIP_LAYERS"
REFUSED_MESSAGE = (
    "the submission was not run: no filesystem isolation (mount namespace, Landlock or an "
    "unprivileged user) is available here, and its process could have written the grader's own "
    "files. Run the grader in a container or as a user that does not own its installation, or "
    "pass --unsafe-no-fs-isolation to run it anyway (only for code you trust)")


@dataclass(frozen=True)
class Submission:
    """A loaded submission: the code to run, as one source (.py) or a list of cells (.ipynb)."""

    path: Path
    kind: str  # "py" or "ipynb"
    sources: tuple[str, ...]


#: given what the child found, pick (function name, probes) or None to stop after loading
Planner = Callable[[RunInfo], "tuple[str, Sequence[Probe]] | None"]


def forbidden_roots() -> list[str]:
    roots = [str(p) for p in PACKAGE_ROOTS if p.is_dir()]
    tests = PACKAGE_ROOTS[0].parent / "tests"
    if (PACKAGE_ROOTS[0].parent / "pyproject.toml").is_file() and tests.is_dir():
        roots.append(str(tests))
    return roots


def encode_calls(function: str, probes: Sequence[Probe]) -> bytes:
    import numpy as np

    arrays: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    offset = 0
    calls = []
    for index, probe in enumerate(probes):
        local: dict[int, int] = {}
        specs: list[dict[str, Any]] = []
        for arg in probe.args:
            if isinstance(arg, np.ndarray):
                if id(arg) not in local:
                    data = np.ascontiguousarray(arg).tobytes()
                    local[id(arg)] = len(arrays)
                    arrays.append({"dtype": arg.dtype.str, "shape": list(arg.shape),
                                   "offset": offset, "nbytes": len(data)})
                    chunks.append(data)
                    offset += len(data)
                specs.append({"array": local[id(arg)]})
            else:
                specs.append({"value": arg})
        calls.append({"index": index, "args": specs, "repeat": probe.repeat})
    header = {"type": "calls", "function": function, "calls": calls, "arrays": arrays}
    return wire.encode(header, b"".join(chunks))


def _numeric_dtype(text: object) -> Any:
    """The dtype a frame names, when it is a plain number type (any byte order or precision)."""
    import numpy as np

    if not isinstance(text, str) or len(text) > 8:
        raise wire.ProtocolError(f"unexpected dtype {text!r}")
    try:
        dtype = np.dtype(text)
    except TypeError as exc:
        raise wire.ProtocolError(f"unexpected dtype {text!r}") from exc
    if dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise wire.ProtocolError(f"unexpected dtype {text!r}")
    return dtype


def decode_arrays(header: dict[str, Any], blob: bytes) -> dict[str, Any]:
    """The arrays of a result frame, checked field by field before any byte is interpreted, in
    native byte order (extended precision as float64)."""
    import numpy as np

    arrays = {}
    metas = header.get("arrays", [])
    if not isinstance(metas, list):
        raise wire.ProtocolError("bad array list")
    for meta in metas:
        if not isinstance(meta, dict):
            raise wire.ProtocolError("bad array description")
        dtype = _numeric_dtype(meta.get("dtype"))
        shape, offset, nbytes = meta.get("shape"), meta.get("offset"), meta.get("nbytes")
        if not (isinstance(shape, list) and len(shape) <= 32
                and all(type(s) is int and 0 <= s < 1 << 40 for s in shape)):
            raise wire.ProtocolError("bad shape")
        if not (type(offset) is int and type(nbytes) is int and offset >= 0):
            raise wire.ProtocolError("bad offset")
        count = 1
        for size in shape:
            count *= size
        if nbytes != count * dtype.itemsize or offset + nbytes > len(blob):
            raise wire.ProtocolError("array size does not match its shape")
        array = np.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(shape)
        if dtype.kind == "f" and dtype.itemsize > 8:
            array = array.astype(np.float64)
        elif not dtype.isnative:
            array = array.astype(dtype.newbyteorder("="))
        arrays[str(meta.get("role"))] = array
    return arrays


class _ForkServer:
    """A pre-warmed worker (``worker.py --zygote``) that forks a fresh child per run.

    Used for batch grading, where starting an interpreter and importing NumPy for every
    submission would cost more than grading it. Each run is still its own process in its own
    session, with its own limits, environment, directory and tripwires; only the start-up is shared.
    The server never loads grader code, so a fork holds nothing of the grader's either.
    """

    def __init__(self) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.home = tempfile.mkdtemp(prefix="attention-grader-server-")
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-B", str(WORKER), "--zygote", str(theirs.fileno())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd=self.home, env=child_environment(self.home, secrets.token_hex(8)),
            pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        self.socket = ours
        self.exits: dict[int, int] = {}

    def alive(self) -> bool:
        return self.process.poll() is None

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        ready, _, _ = select.select([self.socket], [], [], max(0.0, timeout))
        if not ready:
            return None
        data = self.socket.recv(1 << 16)
        if not data:
            raise EOFError
        message = json.loads(data)
        if message.get("op") == "exited":
            self.exits[int(message["pid"])] = int(message["code"])
        return dict(message)

    def _until(self, op: str, seconds: float) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self._receive(deadline - time.monotonic())
            if message is not None and message.get("op") == op:
                return message
        raise EOFError(f"the fork server did not answer {op!r}")

    def spawn(self, cwd: Path, env: dict[str, str], fds: tuple[int, int, int]) -> int:
        import socket

        request = {"op": "spawn", "cwd": str(cwd), "env": env}
        socket.send_fds(self.socket, [json.dumps(request).encode()], list(fds))
        return int(self._until("spawned", 10.0)["pid"])

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

    def sweep(self) -> None:
        """Have the server kill and reap what a finished run left adopted by it. Not awaited: the
        server handles requests in order, so the sweep is done before the next run starts."""
        self.exits.clear()
        with contextlib.suppress(OSError):
            self.socket.send(json.dumps({"op": "sweep"}).encode())

    def close(self) -> None:
        self.socket.close()
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        shutil.rmtree(self.home, ignore_errors=True)


class _Forked:
    """The ``Popen``-like handle of a child forked by the server."""

    def __init__(self, server: _ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid

    def wait(self, timeout: float | None = None) -> int:
        code = self.server.wait(self.pid, 5.0 if timeout is None else timeout)
        if code is None:
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 5.0)
        return code


_fork_server: _ForkServer | None = None
_use_fork_server = False


def use_fork_server(enabled: bool = True) -> None:
    """Run each submission in a fork of a pre-warmed server (batch grading) instead of a new
    interpreter. The server starts on first use and dies with this process."""
    global _use_fork_server
    _use_fork_server = enabled


def _server() -> _ForkServer | None:
    global _fork_server
    if not _use_fork_server:
        return None
    if _fork_server is None or not _fork_server.alive():
        if _fork_server is not None:
            _fork_server.close()
        _fork_server = _ForkServer()
        atexit.register(_fork_server.close)
    return _fork_server


class _Child:
    """One worker process and its two pipes."""

    def __init__(self, submission: Submission, workdir: Path, logdir: Path, newroot: Path,
                 limits: Limits, attempt: int) -> None:
        self.nonce = secrets.token_hex(16)
        self.marker = secrets.token_hex(8)
        self.limits = limits
        request_read, self.request_write = os.pipe()
        self.result_read, result_write = os.pipe()
        self.stdout_path = logdir / f"stdout-{attempt}.txt"
        self.server = _server()  # before listing what to spare: the server is one of them
        self.spared = own_children()
        self.process: subprocess.Popen[bytes] | _Forked
        with open(self.stdout_path, "wb") as out:
            environment = child_environment(str(workdir), self.marker)
            if self.server is not None:
                pid = self.server.spawn(workdir, environment,
                                        (request_read, result_write, out.fileno()))
                self.process = _Forked(self.server, pid)
            else:
                self.process = subprocess.Popen(
                    [sys.executable, "-I", "-B", str(WORKER), str(request_read),
                     str(result_write)],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=workdir,
                    env=environment,
                    pass_fds=(request_read, result_write),
                    start_new_session=True,
                )
        os.close(request_read)
        os.close(result_write)
        self.reader = wire.FrameReader(limits.max_result_mb << 20)
        self.pending: list[tuple[dict[str, Any], bytes]] = []
        setup = {
            "type": "setup",
            "nonce": self.nonce,
            "kind": submission.kind,
            "sources": list(submission.sources),
            "filename": printable_name(submission.path.name),  # tracebacks say attention.py, not a temp path
            "limits": limits.for_child(),
            "forbidden_roots": forbidden_roots(),
            "wanted": list(WANTED_FUNCTIONS),
            "confine": {
                "workdir": str(workdir),
                "newroot": str(newroot),
                "forbidden_roots": forbidden_roots(),
                "require_fs_isolation": not limits.unsafe_no_fs_isolation,
                "skip": [x for x in os.environ.get(SKIP_LAYERS_VARIABLE, "").split(",") if x],
            },
        }
        self.send(wire.encode(setup))

    def send(self, data: bytes) -> None:
        def write_all() -> None:
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self.request_write, view):]
            except OSError:
                pass

        threading.Thread(target=write_all, daemon=True).start()

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

    def death_kind(self) -> tuple[str, str]:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "crashed", "the submission's process stopped answering"
        if code in (-signal.SIGXCPU, -signal.SIGKILL):
            return "timeout", "the submission used up its CPU time"
        if code < 0:
            return "crashed", f"the submission's process was killed by {signal.Signals(-code).name}"
        return "crashed", f"the submission's process exited with status {code} during the call"

    def stop(self) -> None:
        kill_run(self.process.pid, self.marker, self.spared)
        if self.server is not None:  # the server reaps its forks; it is told to sweep up
            self.server.sweep()
        else:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for fd in (self.request_write, self.result_read):
            try:
                os.close(fd)
            except OSError:
                pass


KNOWN_LAYERS = ("pid-namespace", "mount-namespace", "network-namespace", "read-only-root",
                "unprivileged-uid", "no-capabilities", "landlock", "seccomp")


def _strings(value: object, limit: int) -> list[str]:
    return [str(x)[:500] for x in value[:limit]] if isinstance(value, list) else []


def _signatures(value: object) -> dict[str, Any]:
    """``{name: [[parameter, kind, has default], ...] or None}``, or nothing when malformed."""
    if not isinstance(value, dict):
        return {}
    kept: dict[str, Any] = {}
    for name, params in list(value.items())[:10]:
        if params is None:
            kept[str(name)] = None
        elif isinstance(params, list) and all(
                isinstance(p, list) and len(p) == 3 and isinstance(p[0], str)
                and isinstance(p[1], str) and isinstance(p[2], bool) for p in params):
            kept[str(name)] = params[:50]
    return kept


def _error_from(value: object, default: str) -> GraderError:
    entry = value if isinstance(value, dict) else {}
    return GraderError(str(entry.get("kind", default)), str(entry.get("message"))[:4000])


def _info_from_loaded(header: dict[str, Any], info: RunInfo) -> None:
    """What the child found after loading, taken only in shapes the grader expects."""
    info.defined_functions = tuple(_strings(header.get("functions"), 200))
    info.signatures = _signatures(header.get("signatures"))
    fatal = header.get("fatal")
    if fatal:
        error = _error_from(fatal, "runtime-error")
        kind = error.kind if error.kind in ("syntax-error", "runtime-error") else "runtime-error"
        info.fatal = GraderError(kind, error.message)
    errors = header.get("errors")
    for entry in errors[:20] if isinstance(errors, list) else ():
        error = _error_from(entry, "runtime-error")
        where = entry.get("where") if isinstance(entry, dict) else None
        kind = error.kind if error.kind in ("syntax-error", "timeout", "memory-limit") else \
            "runtime-error"
        info.load_errors.append(GraderError(kind, f"{str(where)[:100]}: {error.message}"))


def _outcome(probe: Probe, header: dict[str, Any], blob: bytes) -> CallOutcome:
    status = header.get("status")
    if status != "ok":
        kind = status if status in ("wrong-signature", "wrong-shape", "runtime-error",
                                    "memory-limit", "timeout") else "runtime-error"
        return CallOutcome(probe.id, kind, str(header.get("message", ""))[:2000])
    arrays = decode_arrays(header, blob)
    if "output" not in arrays:
        raise wire.ProtocolError("result without output")
    # No answer to these inputs, right or wrong, is far larger than the inputs: refusing bigger
    # arrays here, and copying the rest out of the frame, keeps the grader's memory small.
    limit = 16 * probe.size + 4096
    too_big = next((a for a in arrays.values() if a.size > limit), None)
    if too_big is not None:
        return CallOutcome(probe.id, "wrong-shape",
                           f"returned an array of shape {tuple(too_big.shape)}, far larger than "
                           "any answer for these inputs")
    arrays = {role: array.copy() for role, array in arrays.items()}
    inputs = tuple(arrays[k] for k in sorted((k for k in arrays if k.startswith("input:")),
                                             key=lambda k: int(k.split(":")[1])))
    seconds = header.get("seconds")
    return CallOutcome(
        probe.id,
        output=arrays["output"],
        weights=arrays.get("weights"),
        repeat_output=arrays.get("repeat"),
        inputs_after=inputs,
        seconds=float(seconds) if type(seconds) in (int, float) else 0.0,
    )


#: what reading a frame the submission forged can raise: all mean "it broke the channel"
MALFORMED = (wire.ProtocolError, ValueError, TypeError, KeyError, AttributeError, IndexError,
             OverflowError, MemoryError)

_one_run_at_a_time = threading.Lock()
_last_run_started: int | None = None


def run(submission: Submission, plan: Planner, limits: Limits = DEFAULT_LIMITS,
        prepare: Callable[[], object] | None = None) -> tuple[RunInfo, list[CallOutcome]]:
    """Load the submission in a child, let ``plan`` pick the calls, and run them.

    ``prepare`` runs in this process right after the first child starts, so that slow imports
    here overlap with the child's start-up. Runs in one process take turns (threads wait): the
    clean-up after a run kills by process, and would end a concurrent run's children.
    """
    global _last_run_started
    with _one_run_at_a_time:
        reap_zombies(_last_run_started)  # what died late in the run before
        _last_run_started = boot_ticks()
        try:
            return _run(submission, plan, limits, prepare)
        finally:
            reap_zombies(_last_run_started)


def _run(submission: Submission, plan: Planner, limits: Limits,
         prepare: Callable[[], object] | None) -> tuple[RunInfo, list[CallOutcome]]:
    info = RunInfo()
    layers = ["child-process", "new-session-kill", "rlimits", "scrubbed-environment",
              "audit-hook-tripwire", "raw-array-channel"]
    if become_subreaper():
        layers.append("child-subreaper")
    if _use_fork_server:
        layers.append("prewarmed-fork-server")
    info.isolation = tuple(layers)
    started, started_wall = time.monotonic(), time.time()
    total_deadline = started + limits.total_seconds
    base = Path(tempfile.mkdtemp(prefix="attention-grader-"))
    workdir, logdir, newroot = base / "work", base / "log", base / "root"
    for folder in (workdir, logdir, newroot):
        folder.mkdir()
    outcomes: dict[int, CallOutcome] = {}
    tripped: list[str] = []
    try:
        planned: tuple[str, Sequence[Probe]] | None = None
        attempt = 0
        while True:
            remaining = [i for i in range(len(planned[1])) if i not in outcomes] if planned else []
            child = _Child(submission, workdir, logdir, newroot, limits, attempt)
            if prepare is not None and attempt == 0:
                prepare()
            try:
                planned = _drive(child, info, plan, planned, remaining, outcomes, tripped,
                                 limits, total_deadline, first=attempt == 0)
            finally:
                child.stop()
            attempt += 1
            if planned is None or len(outcomes) == len(planned[1]):
                break
            out_of_time = time.monotonic() >= total_deadline
            if attempt > limits.max_restarts or out_of_time:
                last = outcomes[max(outcomes)] if outcomes else None
                kind = "timeout" if out_of_time or last is None else str(last.error_kind)
                reason = ("the time budget was used up" if out_of_time else
                          f"the submission's process was lost {attempt} times "
                          f"(last: {kind}), so the remaining probes were skipped")
                for i, probe in enumerate(planned[1]):
                    if i not in outcomes:
                        outcomes[i] = CallOutcome(probe.id, kind, f"not run: {reason}")
                break
        if "unprivileged-uid" in info.isolation and not {"read-only-root", "landlock"} & set(
                info.isolation):
            remove_leftovers(UNPRIVILEGED_ID, started_wall)
        info.stdout = _excerpt(logdir)
        if tripped:
            info.forbidden = sorted(set(tripped))[:10]
        probes = planned[1] if planned else []
        return info, [outcomes[i] for i in range(len(probes))]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _drive(child: _Child, info: RunInfo, plan: Planner,
           planned: tuple[str, Sequence[Probe]] | None, remaining: list[int],
           outcomes: dict[int, CallOutcome], tripped: list[str], limits: Limits,
           total_deadline: float, first: bool) -> tuple[str, Sequence[Probe]] | None:
    """Talk to one child until it is done, hangs or dies; return the plan (made on first load)."""
    import_deadline = min(time.monotonic() + limits.import_seconds, total_deadline)
    try:
        frame = child.next_frame(import_deadline)
        if frame is not None and frame[0].get("type") == "hardened":
            hardened = frame[0]
            if first:  # sent before the submission runs, so the submission cannot forge it
                layers = hardened.get("layers")
                layers = [x for x in layers if x in KNOWN_LAYERS] if isinstance(layers, list) else []
                info.isolation = tuple(dict.fromkeys([*info.isolation, *layers]))
            if hardened.get("refused"):
                info.fatal = GraderError("isolation-unavailable", REFUSED_MESSAGE)
                return None
            frame = child.next_frame(import_deadline)
    except (EOFError, wire.ProtocolError):
        frame = None
        if first:
            kind, message = child.death_kind()
            info.fatal = GraderError(kind, message.replace("during the call", "while loading"))
            return None
    if frame is None:
        if first:
            info.fatal = GraderError(
                "timeout", f"loading the submission took longer than {limits.import_seconds:g} s")
            return None
        for i in remaining:
            outcomes[i] = CallOutcome(planned[1][i].id, "timeout",  # type: ignore[index]
                                      "not run: loading the submission again timed out")
        return planned
    header, _ = frame
    tripped.extend(_strings(header.get("tripped"), 10))
    if first:
        try:
            _info_from_loaded(header, info)
        except MALFORMED as exc:
            info.fatal = GraderError("crashed", f"the submission broke the result channel ({exc})")
            return None
        planned = plan(info)
        if planned is None:
            return None
        remaining = list(range(len(planned[1])))
    assert planned is not None
    function, probes = planned
    child.send(encode_calls(function, [probes[i] for i in remaining]))
    for position, index in enumerate(remaining):
        deadline = min(time.monotonic() + limits.call_seconds, total_deadline)
        try:
            frame = child.next_frame(deadline)
        except (EOFError, wire.ProtocolError) as exc:
            if isinstance(exc, wire.ProtocolError):
                kind, message = "crashed", f"the submission broke the result channel ({exc})"
            else:
                kind, message = child.death_kind()
            outcomes[index] = CallOutcome(probes[index].id, kind, message)
            return planned
        if frame is None:
            outcomes[index] = CallOutcome(
                probes[index].id, "timeout",
                f"the call did not return within {limits.call_seconds:g} s")
            return planned
        header, blob = frame
        tripped.extend(_strings(header.get("tripped"), 10))
        if header.get("type") != "result" or header.get("index") != position:
            outcomes[index] = CallOutcome(probes[index].id, "crashed",
                                          "the submission broke the result channel")
            return planned
        try:
            outcomes[index] = _outcome(probes[index], header, blob)
        except MALFORMED as exc:
            outcomes[index] = CallOutcome(probes[index].id, "crashed",
                                          f"the submission broke the result channel ({exc})")
            return planned
    return planned


def _excerpt(logdir: Path) -> str:
    parts = []
    for path in sorted(logdir.glob("stdout-*.txt")):
        with open(path, "rb") as handle:
            parts.append(handle.read(OUTPUT_EXCERPT_BYTES))
    text = b"".join(parts)[:OUTPUT_EXCERPT_BYTES].decode("utf-8", "replace")
    return text
