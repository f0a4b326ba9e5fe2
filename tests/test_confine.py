"""What the child's confinement (``grader/sandbox/confine.py``) and limits promise, each layer on
its own. The module is loaded by path, as ``worker.py`` loads it; every layer is applied in a
forked child, so that this process stays unconfined, and a layer the kernel refuses here is
skipped, never passed."""

from __future__ import annotations

import ctypes
import errno
import importlib.util
import json
import os
import resource
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SANDBOX = Path(__file__).resolve().parents[1] / "grader" / "sandbox"


def load_by_path(name: str, filename: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SANDBOX / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


confine = load_by_path("_ag_confine_test", "confine.py")


def in_a_fork(check: Callable[[], Any]) -> Any:
    """``check()``'s result (JSON), computed in a forked child that exits afterwards: what it
    does to its own process never reaches this one."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child never returns into pytest)
        try:
            os.close(read)
            data = json.dumps({"result": check()})
        except BaseException as exc:  # noqa: BLE001
            data = json.dumps({"raised": repr(exc)})
        os.write(write, data.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        data = handle.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    answer = json.loads(data)
    assert "raised" not in answer, answer["raised"]
    return answer["result"]


def no_new_privs() -> int:
    return int(confine._libc().prctl(39, 0, 0, 0, 0))  # PR_GET_NO_NEW_PRIVS


def status_field(name: str) -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    raise KeyError(name)


def error_of(action: Callable[[], object]) -> int:
    """The errno ``action`` fails with (0: it did not fail)."""
    try:
        action()
    except OSError as exc:
        return exc.errno or -1
    return 0


def libc_errno(result: int) -> int:
    return ctypes.get_errno() if result == -1 else 0


def unconfined_socket() -> None:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()


# -- seccomp ---------------------------------------------------------------------------------

needs_seccomp = pytest.mark.skipif(confine.seccomp_program(([], [])) is None,
                                   reason="no libseccomp here")


@needs_seccomp
def test_seccomp_denies_ip_sockets_tracing_namespaces_and_ipc() -> None:
    def check() -> dict[str, Any]:
        libc = confine._libc()
        took = confine.seccomp_filter(([], []), deny_ipc=True)
        return {
            "took": took,
            "no_new_privs": no_new_privs(),
            "inet": error_of(unconfined_socket),
            "inet6": error_of(lambda: socket.socket(socket.AF_INET6).close()),
            "unix": error_of(lambda: socket.socket(socket.AF_UNIX).close()),
            "ptrace": libc_errno(libc.ptrace(0, 0, None, None)),  # PTRACE_TRACEME
            "unshare": libc_errno(libc.unshare(confine.CLONE_NEWNS)),
            "shmget": libc_errno(libc.shmget(0, 4096, 0o600)),  # IPC_PRIVATE
            "read": len(Path(__file__).read_bytes()) > 0,
        }

    seen = in_a_fork(check)
    assert seen["took"] and seen["no_new_privs"] == 1
    assert seen["unix"] == 0 and seen["read"]  # (what is not denied still works)
    denied = {name: seen[name] for name in ("inet", "inet6", "ptrace", "unshare", "shmget")}
    assert denied == dict.fromkeys(denied, errno.EACCES)


@needs_seccomp
def test_seccomp_allows_unix_sockets_only() -> None:
    """Every socket family but AF_UNIX is denied: netlink (NETLINK_USERSOCK was a channel
    between concurrent runs without a network namespace), packet, crypto, vsock, IP..."""
    families = {"netlink-usersock": (socket.AF_NETLINK, socket.SOCK_RAW, 2),
                "netlink-route": (socket.AF_NETLINK, socket.SOCK_DGRAM, 0),
                "packet": (17, socket.SOCK_DGRAM, 0), "alg": (38, socket.SOCK_SEQPACKET, 0),
                "vsock": (40, socket.SOCK_STREAM, 0), "inet": (socket.AF_INET, socket.SOCK_DGRAM, 0)}

    def check() -> dict[str, int]:
        assert confine.seccomp_filter(([], []))
        seen = {name: error_of(lambda args=args: socket.socket(*args).close())
                for name, args in families.items()}
        seen["unix"] = error_of(lambda: socket.socket(socket.AF_UNIX).close())
        seen["unix-pair"] = error_of(lambda: [s.close() for s in socket.socketpair()])
        return seen

    seen = in_a_fork(check)
    assert seen == {**dict.fromkeys(families, errno.EACCES), "unix": 0, "unix-pair": 0}


@needs_seccomp
def test_seccomp_refuses_a_new_action_for_sigchld() -> None:
    """Ignoring SIGCHLD (or SA_NOCLDWAIT) has the kernel reap a run's children, whose CPU time
    then reaches no parent's cutime: refused. Asking for the action, and other signals'
    actions, still work."""
    import signal

    def check() -> dict[str, int]:
        assert confine.seccomp_filter(([], []))
        return {"ignore": error_of(lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN)),
                "handle": error_of(lambda: signal.signal(signal.SIGCHLD, lambda *a: None)),
                "ask": error_of(lambda: signal.getsignal(signal.SIGCHLD)),
                "other": error_of(lambda: signal.signal(signal.SIGUSR1, signal.SIG_IGN))}

    assert in_a_fork(check) == {"ignore": errno.EPERM, "handle": errno.EPERM, "ask": 0,
                                "other": 0}


@needs_seccomp
def test_seccomp_allows_ipc_where_the_run_has_a_namespace_for_it() -> None:
    def check() -> list[int]:
        libc = confine._libc()
        assert confine.seccomp_filter(([], []), deny_ipc=False)
        made = libc.shmget(0, 4096, 0o600)
        if made >= 0:
            libc.shmctl(made, 0, None)  # IPC_RMID
        return [libc_errno(made), libc_errno(libc.unshare(confine.CLONE_NEWNS))]

    assert in_a_fork(check) == [0, errno.EACCES]


@needs_seccomp
def test_seccomp_refuses_signals_to_the_protected_and_to_everyone() -> None:
    def check() -> dict[str, int]:
        grader = os.getppid()  # (this test's process)
        assert confine.seccomp_filter(([grader], [os.getpgid(grader)]))
        return {"grader": error_of(lambda: os.kill(grader, 0)),
                "its group": error_of(lambda: os.killpg(os.getpgid(grader), 0)),
                "everyone": error_of(lambda: os.kill(-1, 0)),
                "itself": error_of(lambda: os.kill(os.getpid(), 0))}

    assert in_a_fork(check) == {"grader": errno.EPERM, "its group": errno.EPERM,
                                "everyone": errno.EPERM, "itself": 0}


def test_the_protected_are_the_ancestors_and_their_groups() -> None:
    pids, groups = in_a_fork(lambda: confine.ancestors())
    assert pids[:2] == [os.getpid(), os.getppid()]
    assert os.getpgrp() not in groups  # (the child's own group, which it shares with us)
    pids, _ = confine.ancestors(start=os.getpid())
    assert pids[:2] == [os.getpid(), os.getppid()]


# -- Landlock --------------------------------------------------------------------------------

def test_landlock_allows_exactly_its_rules(tmp_path: Path) -> None:
    readable, writable, forbidden, outside = (tmp_path / n for n in
                                              ("readable", "writable", "readable/grader",
                                               "outside"))
    for folder in (readable, writable, forbidden, outside):
        folder.mkdir(parents=True)
    for folder in (readable, forbidden, outside):
        (folder / "file.txt").write_text("text")

    def check() -> dict[str, Any] | None:
        libc = confine._libc()
        ruleset = confine.prepare_landlock(libc, [str(forbidden)], [str(readable)],
                                           [str(writable)])
        if ruleset is None:
            return None
        took = confine.restrict_landlock(libc, ruleset)
        return {
            "took": took,
            "read allowed": error_of(lambda: (readable / "file.txt").read_text()),
            "list allowed": error_of(lambda: os.listdir(readable)),
            "write allowed": error_of(lambda: (writable / "new.txt").write_text("x")),
            "read forbidden": error_of(lambda: (forbidden / "file.txt").read_text()),
            "read outside": error_of(lambda: (outside / "file.txt").read_text()),
            "write readable": error_of(lambda: (readable / "new.txt").write_text("x")),
            "no_new_privs": no_new_privs(),  # (/proc is not among the rules)
        }

    seen = in_a_fork(check)
    if seen is None:
        pytest.skip("no Landlock here")
    assert seen.pop("took") and seen.pop("no_new_privs") == 1
    assert seen == {"read allowed": 0, "list allowed": 0, "write allowed": 0,
                    "read forbidden": errno.EACCES, "read outside": errno.EACCES,
                    "write readable": errno.EACCES}


def test_landlock_is_never_partial(tmp_path: Path) -> None:
    """A working directory that cannot be ruled gives no ruleset at all, not one without it."""
    def check() -> list[bool]:
        libc = confine._libc()
        whole = confine.prepare_landlock(libc, [], [str(tmp_path)], [str(tmp_path)])
        if whole is None:
            return []
        os.close(whole)
        return [confine.prepare_landlock(libc, [], [str(tmp_path)],
                                         [str(tmp_path / "missing")]) is None,
                confine.restrict_landlock(libc, None)]

    seen = in_a_fork(check)
    if not seen:
        pytest.skip("no Landlock here")
    assert seen == [True, False]


def test_landlock_rules_list_a_folder_that_holds_a_forbidden_root_but_not_the_root(
        tmp_path: Path) -> None:
    (tmp_path / "grader").mkdir()
    (tmp_path / "numpy").mkdir()
    rules = dict(confine._landlock_rules([str(tmp_path / "grader")], [str(tmp_path)],
                                         ["/work"], 0xFFFF))
    assert rules[str(tmp_path)] == confine.LANDLOCK_READ_DIR
    assert rules[str(tmp_path / "numpy")] == confine.LANDLOCK_READ
    assert str(tmp_path / "grader") not in rules and rules["/work"] == 0xFFFF


def test_no_readable_path_is_or_holds_a_forbidden_root() -> None:
    """Not the grader's packages, nor the checkout that holds them (on ``sys.path`` here)."""
    checkout = SANDBOX.parents[1]
    roots = [str(checkout / name) for name in ("grader", "reference", "tests")]
    assert str(checkout) in sys.path or str(checkout) in map(os.path.abspath, sys.path)
    readable = [os.path.realpath(p) for p in confine.readable_paths(roots)]
    assert "/usr" in readable
    assert not [p for p in readable if confine._inside(p, roots)
                or any(confine._inside(root, [p]) for root in roots)]


# -- privileges ------------------------------------------------------------------------------

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


@as_root
def test_capabilities_are_dropped_bounding_set_too() -> None:
    def check() -> list[str]:
        assert confine.drop_capabilities(confine._libc())
        return [status_field(name) for name in ("CapEff", "CapPrm", "CapBnd")]

    assert in_a_fork(check) == ["0000000000000000"] * 3


@as_root
def test_the_run_continues_as_its_own_uid_owning_its_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    uid = confine.UNPRIVILEGED_ID - 7

    def check() -> list[Any]:
        took = confine.drop_to_nobody(str(work), (), uid)
        return [took, os.getuid(), os.geteuid(), os.getgid(), os.getgroups(),
                list(resource.getrlimit(resource.RLIMIT_NPROC))]

    assert in_a_fork(check) == [True, uid, uid, uid, [], [confine.MAX_PROCESSES] * 2]
    assert [(work / "sub").stat().st_uid, work.stat().st_uid] == [uid, uid]
    assert work.stat().st_mode & 0o777 == 0o700


@as_root
def test_no_uid_drop_where_the_run_could_not_reach_the_interpreter(tmp_path: Path) -> None:
    private = tmp_path / "private"
    (private / "bin").mkdir(parents=True)
    (private / "bin" / "python").write_text("")
    private.chmod(0o700)
    needed = (str(private / "bin" / "python"),)
    assert in_a_fork(lambda: [confine.drop_to_nobody(str(tmp_path), needed, 4321),
                              os.getuid()]) == [False, 0]


def test_an_ordinary_user_is_not_dropped() -> None:
    def check() -> bool:
        if os.geteuid() == 0:
            os.setresuid(4321, 4321, 4321)
        return bool(confine.drop_to_nobody("/", ()))

    assert in_a_fork(check) is False


def test_which_layers_keep_a_run_off_the_file_system() -> None:
    assert confine.has_filesystem_isolation(["seccomp", "landlock"])
    assert not confine.has_filesystem_isolation(["seccomp", "no-capabilities"])
    assert confine.only_the_uid_separates(["unprivileged-uid", "seccomp"])
    assert not confine.only_the_uid_separates(["unprivileged-uid", "landlock"])
    assert not confine.only_the_uid_separates(["read-only-root"])


# -- the child's limits (``worker.apply_limits``) --------------------------------------------

LIMITS = {"memory_bytes": 1 << 30, "fsize_bytes": 1 << 20, "nofile": 64, "cpu_seconds": 9}


def limits_after_apply_limits(name: str) -> list[int]:
    """``name``'s limit in a fork that raised its soft limit as far as it may, then applied the
    child's limits."""
    worker = load_by_path("_ag_worker_test", "worker.py")

    def check() -> list[int]:
        limit = getattr(resource, name)
        resource.setrlimit(limit, (resource.getrlimit(limit)[1],) * 2)
        worker.apply_limits(LIMITS)
        return list(resource.getrlimit(limit))

    return list(in_a_fork(check))


@pytest.mark.parametrize("name,expected", [
    ("RLIMIT_AS", [1 << 30] * 2), ("RLIMIT_FSIZE", [1 << 20] * 2), ("RLIMIT_NOFILE", [64, 64]),
    ("RLIMIT_CPU", [9, 11]),
])
def test_the_childs_limits_are_set(name: str, expected: list[int]) -> None:
    assert limits_after_apply_limits(name) == expected


def test_the_child_dumps_no_core() -> None:
    assert limits_after_apply_limits("RLIMIT_CORE") == [0, 0]
