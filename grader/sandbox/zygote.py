"""The pre-warmed fork server of batch grading (``worker.py --zygote``): NumPy is imported once,
in ``worker.py``, and every submission runs in a fresh fork of this clean process, which never
loads grader code. Standard library only; loaded by path.
"""

import ctypes
import gc
import importlib.util
import json
import os
import select
import signal
import socket

_here = os.path.dirname(os.path.abspath(__file__))


def _load(name, filename):
    spec = importlib.util.spec_from_file_location(name, os.path.join(_here, filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve_forks(control_fd, serve, apply_limits, prepare=None):
    """Fork one fresh child per request and have it ``serve`` the run (``prepare``, given the
    request, works out here once what every fork would otherwise work out for itself).

    Requests arrive on a SOCK_SEQPACKET socket with the run's three fds (request, result, stdout)
    attached; answers are ``spawned`` (with the pid) and ``exited`` (with the return code).
    """
    process_hygiene = _load("_ag_processes", "processes.py")  # standard library only
    apply_limits({})  # only the death signal: the zygote dies with the grader
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: escaped grandchildren come back here
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no fork can reach our /proc/<pid>/mem
    control = socket.socket(fileno=control_fd)
    running = set()

    def report_exits():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in running:
                running.discard(pid)
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                control.send(json.dumps({"op": "exited", "pid": pid, "code": code}).encode())

    while True:
        ready, _, _ = select.select([control], [], [], 0.02)
        report_exits()
        if not ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
        except OSError:
            return
        if not message:
            return
        request = json.loads(message)
        if request["op"] == "spawn":
            if prepare is not None:
                prepare(request)
            pid = os.fork()
            if pid == 0:
                _forked_run(control, request, fds, serve, libc)
            for fd in fds:
                os.close(fd)
            running.add(pid)
            control.send(json.dumps({"op": "spawned", "pid": pid}).encode())
        elif request["op"] == "warm":  # import these once for every later fork
            for name in request.get("names", ()):
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 - a fork imports it itself, and says what failed
                    pass
        elif request["op"] == "sweep":  # kill what a finished run left adopted by us
            # (a run in a pid namespace of its own leaves nothing outside it to adopt)
            adopted = [] if request.get("contained") else process_hygiene.own_children()
            for child in adopted:
                if child not in running:
                    try:
                        os.kill(child, signal.SIGKILL)
                    except OSError:
                        pass
            report_exits()
            _reap_others(running)
            control.send(json.dumps({"op": "swept"}).encode())


def _reap_others(running):
    for _ in range(100):
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0 or pid in running:
            return


def _forked_run(control, request, fds, serve, libc):
    """In the fork: become a fresh session with the run's fds, directory and environment."""
    # what the server holds is never collected here: a collection would write to every one of
    # its objects, and so copy every page of them
    gc.freeze()
    try:
        control.close()
        request_fd, result_fd, out_fd = fds
        os.setsid()
        for signum in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        keep = sorted({0, 1, 2, request_fd, result_fd})
        for low, high in zip(keep, keep[1:] + [1 << 16]):
            os.closerange(low + 1, high)
        os.chdir(request["cwd"])
        # dumpable again (the server is not) until confinement: a user namespace's id maps are
        # written through our /proc entries, which are root's in a process that is not
        libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        os.environ.clear()
        os.environ.update(request["env"])
        serve(request_fd, result_fd)
    except BaseException:  # noqa: BLE001 - a fork must never return into the server loop
        os._exit(70)
    os._exit(0)
