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
import struct
import time

_here = os.path.dirname(os.path.abspath(__file__))


def _load(name, filename):
    spec = importlib.util.spec_from_file_location(name, os.path.join(_here, filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve_forks(control_fd, serve, apply_limits, prepare=None, warm=None, namespaces=None):
    """Fork one fresh child per request and have it ``serve`` the run (``prepare``, given the
    request, works out here once what every fork would otherwise work out for itself; ``warm``,
    given this server's pid, likewise for what depends on the server itself; ``namespaces``,
    where it can, makes each fork the first process of a pid namespace of its own, which runs
    the submission there: see ``confine.RunNamespaces``).

    Requests arrive on a SOCK_SEQPACKET socket with the run's three fds (request, result, stdout)
    attached; answers are ``spawned`` (with the pid) and ``exited`` (with the return code). A
    ``server`` request (with a new control socket attached) forks a second server from this one,
    which imports more before it serves on that socket; the answer carries a pidfd of it.
    """
    process_hygiene = _load("_ag_processes", "processes.py")  # standard library only
    apply_limits({})  # only the death signal: the zygote dies with the grader (or its server)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: escaped grandchildren come back here
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no fork can reach our /proc/<pid>/mem
    if warm is not None:
        warm(os.getpid())
    control = socket.socket(fileno=control_fd)
    running = set()
    servers = set()  # the servers forked from this one: no run's, never swept
    statuses = {}  # fork -> the pipe a death by its own signal is told through (RunNamespaces)

    def report_exits():
        adopted = 0.0  # the CPU time of the reaped that were neither runs nor servers
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                if adopted:  # (a run's orphans: the grader charges the run for them)
                    control.send(json.dumps({"op": "adopted", "seconds": adopted}).encode())
                return
            if pid not in running and pid not in servers:
                adopted += usage.ru_utime + usage.ru_stime
            servers.discard(pid)
            reported = statuses.pop(pid, None)
            if reported is not None:  # the fork was the init of the run's namespace
                status = _runner_status(reported, status)
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
            contained = (namespaces is not None and "namespaces" not in request.get("skip", ())
                         and namespaces.enter())
            status_read, status_write = os.pipe() if contained else (None, None)
            pid = os.fork()
            if pid == 0:
                _forked_run(control, request, fds, serve, libc, namespaces,
                            status_write if contained else None)
            if contained:
                namespaces.leave()
                os.close(status_write)
                statuses[pid] = status_read
            for fd in fds:
                os.close(fd)
            running.add(pid)
            control.send(json.dumps({"op": "spawned", "pid": pid}).encode())
        elif request["op"] == "warm":  # import these once for every later fork
            _import_all(request.get("names", ()))
        elif request["op"] == "server":  # what this server imported is not imported again
            pid = os.fork()
            if pid == 0:
                _forked_server(control, request, fds, serve, apply_limits, prepare, warm,
                               namespaces)
            for fd in fds:
                os.close(fd)
            servers.add(pid)
            answer = json.dumps({"op": "server", "pid": pid, "id": request.get("id")}).encode()
            try:
                handle = os.pidfd_open(pid)  # (before it can be reaped: it is this server's pid)
            except (AttributeError, OSError):  # (an old kernel: the grader starts a server anew)
                os.kill(pid, signal.SIGKILL)
                control.send(answer)
                continue
            try:
                socket.send_fds(control, [answer], [handle])
            finally:
                os.close(handle)
        elif request["op"] == "sweep":  # kill what a finished run left adopted by us
            # (a run in a pid namespace of its own leaves nothing outside it to adopt)
            adopted = [] if request.get("contained") else process_hygiene.own_children()
            killed = {child for child in adopted if child not in servers} | running
            for child in killed:  # (the run's first process too: the grader has killed it)
                try:
                    os.kill(child, signal.SIGKILL)
                except OSError:
                    pass
            # the next run starts only when nothing of this one is left: its first process
            # (pid 1 of its namespace: reaped only once every process in it is gone) and what
            # it left here are reaped, so no file, socket or memory of theirs outlives the run
            if not _reaped(killed, report_exits):
                os._exit(70)  # (something will not die: the grader starts a new server)
            control.send(json.dumps({"op": "swept"}).encode())


#: how long a finished run's processes may take to die and be reaped (a run holding gigabytes
#: frees them as it dies)
REAP_SECONDS = 30.0


def _reaped(pids, report_exits):
    """Wait until ``pids`` (children of this server, killed) are all reaped (``report_exits``
    reaps and reports them); False if they were not within ``REAP_SECONDS``."""
    waiting = set(pids)
    deadline = time.monotonic() + REAP_SECONDS
    while True:
        report_exits()
        for pid in list(waiting):
            try:  # (asks only: the exit is reaped, and reported, by report_exits)
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                waiting.discard(pid)  # reaped
        if not waiting:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.0005)


def _import_all(names):
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a fork imports it itself, and says what failed
            pass


def _forked_server(control, request, fds, serve, apply_limits, prepare, warm, namespaces):
    """In the fork: import the request's names, then serve forks on the socket it brought."""
    try:
        control.close()
        _import_all(request.get("names", ()))
        serve_forks(fds[0], serve, apply_limits, prepare, warm, namespaces)
    except BaseException:  # noqa: BLE001 - a fork must never return into the server loop
        os._exit(70)
    os._exit(0)


def _runner_status(reported, status):
    """The wait status of the init of a run's namespace: the one it passed on when a signal
    it sent itself ended it (see ``confine._arm_ending_signals``), else its own."""
    try:
        data = os.read(reported, 4)
    except OSError:
        data = b""
    finally:
        os.close(reported)
    return struct.unpack("i", data)[0] if len(data) == 4 else status


def _take_environment(env):
    """Make the environment ``env``, changing only what differs from the server's own (the same
    names, but for the run's home and marker): clearing and filling it was 0.2 ms a run."""
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _forked_run(control, request, fds, serve, libc, namespaces, status_write=None):
    """In the fork: become a fresh session with the run's fds, directory and environment
    (``status_write``, where this fork is pid 1 of a new namespace and runs the submission
    there: the pipe through which its death by its own signal is told)."""
    # what the server holds is never collected here: a collection would write to every one of
    # its objects, and so copy every page of them
    gc.freeze()
    server = os.getppid()
    try:
        control.close()
        request_fd, result_fd, out_fd = fds
        os.setsid()
        for signum in (signal.SIGCHLD, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        if status_write is None:  # (pid 1 of a run keeps the handlers armed in the server)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if namespaces is not None:
                namespaces.disarm()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        own = [status_write] if status_write is not None else []
        keep = sorted({0, 1, 2, request_fd, result_fd, *own})
        for low, high in zip(keep, keep[1:] + [1 << 16]):
            os.closerange(low + 1, high)
        os.chdir(request["cwd"])
        # dumpable again (the server is not) until confinement: a user namespace's id maps are
        # written through our /proc entries, which are root's in a process that is not
        libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        _take_environment(request["env"])
        if status_write is not None:
            entered = namespaces.split(server, status_write)
            serve(request_fd, result_fd, entered)
        else:
            serve(request_fd, result_fd)
    except BaseException:  # noqa: BLE001 - a fork must never return into the server loop
        os._exit(70)
    os._exit(0)
