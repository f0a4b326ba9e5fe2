"""Process hygiene for the child: its environment, and how it and everything it started are
ended and reaped. Standard library only (the fork server loads this file by path)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
MARKER_VARIABLE = "ATTENTION_GRADER_RUN"
#: variables kept from the grader's environment; everything else (tokens, credentials) is dropped
KEPT_VARIABLES = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")


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


#: the process that is a subreaper already (a fork is not: it must ask again)
_subreaper: int | None = None


def become_subreaper() -> bool:
    """Make orphaned descendants (setsid daemons) children of this process, so they can be killed."""
    global _subreaper
    if not sys.platform.startswith("linux"):
        return False
    if _subreaper == os.getpid():
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        done = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    _subreaper = os.getpid() if done else None
    return done


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, parent, group, session,
    ...), or None when the process is gone."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    return stat[stat.rfind(b")") + 2 :].decode("ascii", "replace").split()


def _read(path: str) -> bytes | None:
    """A small /proc file's bytes, or None (read with plain system calls: a run scans /proc a
    few times, and pathlib's overhead per file was most of that time)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _proc_status(pid: int) -> tuple[int, int, int] | None:
    """(parent pid, process group, session id) of a live (not zombie) process, from /proc."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[2]), int(fields[3])


def _carries_marker(pid: int, marker: str) -> bool:
    return f"{MARKER_VARIABLE}={marker}".encode() in (_read(f"/proc/{pid}/environ") or b"")


def _owner(pid: int) -> int | None:
    """The uid that owns ``/proc/<pid>`` (the process's, unless it made itself non-dumpable:
    then root's; such a process of a run is found as a descendant or as adopted)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def stray_processes(session: int, marker: str, spared: set[int],
                    uid: int | None = None, *, thorough: bool = True,
                    adopters: frozenset[int] = frozenset()) -> list[int]:
    """Processes left by one run: in its session, descended from its first process (however
    deep, whatever session they made), adopted by us, running as the run's own ``uid``, or
    (``thorough``: reading every process's environment) carrying its marker, or adopted by one
    of the ``adopters`` (the fork server: runs in one process take turns, so what it adopted is
    this run's). Not those of the first process's own group: ``kill_run`` kills that group as a
    whole, first."""
    me = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    parents: dict[int, int] = {}
    found = set()
    signalled = set()  # in the run's first process group: killed with it already
    for pid in pids:
        if pid == me or pid in spared:
            continue
        status = _proc_status(pid)
        if status is None:
            continue
        parent, group, sid = status
        parents[pid] = parent
        if group == session:
            signalled.add(pid)
        elif (sid == session or parent == me or parent in adopters
              or (uid is not None and _owner(pid) == uid)
                or (thorough and _carries_marker(pid, marker))):
            found.add(pid)
    # the descendants of the run's first process and of everything found so far
    found |= _descendants(parents, found | signalled | {session})
    return sorted(found - signalled)


def _descendants(parents: dict[int, int], roots: set[int]) -> set[int]:
    """Every process below ``roots``, however deep (``parents``: pid -> parent pid)."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    below: set[int] = set()
    waiting = list(roots)
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in below and child not in roots:
                below.add(child)
                waiting.append(child)
    return below


def tree_cpu_seconds(root: int, adopters: frozenset[int] = frozenset(),
                     since: int | None = None, spared: frozenset[int] = frozenset()) -> float:
    """The CPU time used so far by ``root`` and every process descended from it (those still
    running, and those they have reaped), in seconds; with ``adopters`` (the subreapers a
    run's orphans come to where it has no pid namespace: the grader, the fork server), also by
    the processes they adopted that started since ``since`` (the run's start; runs in one
    process, and in one server, take turns), but the ``spared``, and their descendants."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0.0
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    roots = {root}
    for pid in pids:
        fields = _stat(pid)
        if fields is None or len(fields) < 20:
            continue
        parents[pid] = int(fields[1])
        # utime, stime, and the children's (reaped) cutime, cstime
        ticks[pid] = sum(int(x) for x in fields[11:15])
        if (parents[pid] in adopters and since is not None and int(fields[19]) >= since
                and pid not in spared):
            roots.add(pid)
    tree = roots | _descendants(parents, roots)
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def reap_adopted(since: int, spared: frozenset[int]) -> float:
    """Reap the dead this process adopted (the subreaper) that started since ``since`` (a
    run's start), but the ``spared``, and return the CPU time they used, with everything they
    reaped, in seconds: a run's orphans, counted as they go (and no longer counted against
    its uid's process limit)."""
    if not _a_child_has_died():
        return 0.0
    me = os.getpid()
    used = 0.0
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        if pid in spared:
            continue
        fields = _stat(pid)
        if (fields is None or fields[0] != "Z" or int(fields[1]) != me
                or int(fields[19]) < since):
            continue
        with contextlib.suppress(ChildProcessError):
            done, _, usage = os.wait4(pid, os.WNOHANG)
            if done:
                used += usage.ru_utime + usage.ru_stime
    return used


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in the unit of ``boot_ticks`` (None: it is gone)."""
    fields = _stat(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


#: sessions of runs that were ended here, and processes killed here: their dead are ours to reap
_ended_sessions: list[int] = []
_killed: set[int] = set()


def boot_ticks() -> int:
    """Now, in the unit of a process's start time in ``/proc/<pid>/stat``."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def reap_zombies(since: int | None = None) -> None:
    """Collect the exit status of the dead a run left, adopted by us (the subreaper) when their
    parent died: processes of an ended run's session, killed here, from a run's pid namespace,
    or started since ``since`` (a run's start: while a run lasts, runs take turns, so what starts
    then and ends up ours is the run's). A host program's other children are left to it."""
    if not _a_child_has_died():
        return  # (no scan of /proc: most runs leave nothing to reap here)
    me = os.getpid()
    sessions = set(_ended_sessions)
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return
    for pid in pids:
        fields = _stat(pid)
        if fields is None or fields[0] != "Z" or int(fields[1]) != me:
            continue
        started = int(fields[19])
        if (int(fields[3]) in sessions or pid in _killed or _lived_in_a_namespace(pid)
                or (since is not None and started >= since)):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            _killed.discard(pid)


def settle_run(since: int, spared: set[int], seconds: float = 10.0) -> None:
    """Wait until nothing a run left (started since ``since``) is this process's child, alive
    or dead, but ``spared`` (the fork servers): the killed take a moment to die, and only then
    come to us, the subreaper. When the caller gets its report, it has no child of the run.
    (A live child is waited for only if it is known to be the run's: killed here, of an ended
    run's session, or from a run's pid namespace; a host program's own are left to it.)"""
    me = os.getpid()
    deadline = time.monotonic() + seconds
    while True:
        reap_zombies(since)
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return
        sessions = set(_ended_sessions)
        left = False
        for pid in pids:
            fields = _stat(pid) if pid not in spared else None
            if (fields is not None and int(fields[1]) == me and int(fields[19]) >= since
                    and (fields[0] == "Z" or pid in _killed or int(fields[3]) in sessions
                         or _lived_in_a_namespace(pid))):
                left = True
                break
        if not left or time.monotonic() >= deadline:
            return
        time.sleep(0.002)


def _a_child_has_died() -> bool:
    """Is any child of this process dead and not yet reaped? (Nothing is reaped by asking.)"""
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except (ChildProcessError, OSError, AttributeError):
        return not hasattr(os, "waitid")


def _lived_in_a_namespace(pid: int) -> bool:
    """Did ``pid`` run in a pid namespace below ours (one a run made)?"""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    line = next((x for x in status.splitlines() if x.startswith("NSpid:")), "")
    return len(line.split()) > 2


def own_children() -> set[int]:
    """The processes that are children of this one now (spared by ``kill_run``)."""
    me = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return set()
    return {pid for pid in pids if (_proc_status(pid) or (0,))[0] == me}


def kill_run(pid: int, marker: str, spared: set[int], *, settle: bool = True,
             uid: int | None = None, adopters: frozenset[int] = frozenset()) -> None:
    """SIGKILL the child's process group and every process the run left behind; reap ours.
    ``settle=False`` returns once everything is killed, without waiting for the dying to be
    gone (see ``settle_and_reap``)."""
    _ended_sessions.append(pid)
    del _ended_sessions[:-64]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    killed: set[int] = set()
    for attempt in range(50):
        # the killed may take a while to go (the kernel takes down their namespaces): only a
        # process not yet killed keeps this loop going. The first look reads every process's
        # environment for the marker; what comes later is found by its ancestry, session or uid
        strays = [s for s in stray_processes(pid, marker, spared | {pid}, uid,
                                             thorough=attempt == 0, adopters=adopters)
                  if s not in killed]
        # the scan leaves out the first group's members: whatever is in it now (one that
        # joined it since the first kill too) is killed with it again
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if not strays:
            break
        for stray in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(stray, signal.SIGKILL)
        killed.update(strays)
        _killed.update(strays)
        _reap(killed)
        time.sleep(0.002)
    _reap(killed)
    if settle:
        _settle(pid)
    if len(_killed) > 4096:  # pids are reused: forget the oldest guesses
        _killed.clear()


def end_contained_run(pid: int) -> None:
    """Kill a run whose processes are all in a pid namespace of its first process ``pid``
    (the relay outside it, or the namespace's init itself): its group, and it. The namespace's
    init dies with it (it is it, or asked for SIGKILL on its parent's death), and with the init
    every process in the namespace, however it moved group or session; nothing else can be the
    run's."""
    _ended_sessions.append(pid)
    del _ended_sessions[:-64]
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def settle_and_reap(leader: Any, session: int) -> None:
    """After ``kill_run(..., settle=False)``: wait for the killed child (a ``Popen``), then reap
    what of its session came to us when it went. Meant for a background thread."""
    with contextlib.suppress(Exception):
        leader.wait(timeout=30)
    _settle(session, 5.0)


def _settle(session: int, seconds: float = 1.0) -> None:
    """Wait until every process of ``session`` is dead, reaping those we adopted (not the leader:
    its owner waits for it): killed processes take a moment to die, and only then come to us
    (the subreaper)."""
    me = os.getpid()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        waiting = False
        with contextlib.suppress(OSError):
            for name in os.listdir("/proc"):
                fields = _stat(name) if name.isdigit() else None
                if fields is None or int(fields[3]) != session:
                    continue
                if fields[0] == "Z" and int(fields[1]) == me and int(name) != session:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(int(name), os.WNOHANG)
                elif fields[0] != "Z":
                    waiting = True
        if not waiting:
            return
        time.sleep(0.001)


def _reap(pids: set[int]) -> None:
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)


#: never walked for world-writable folders: kernel views, not places a run leaves files in
NOT_WALKED = ("/proc", "/sys")
_world_writable: list[tuple[str, ...]] = []


def world_writable_folders() -> tuple[str, ...]:
    """Every folder an unprivileged user of this machine may create files in (world-writable,
    reached through folders it may search), found once per process by a walk of the file
    system: folders it may not search are not entered, and neither are those with no folder
    inside (a link count of 2), so only about a third of the folders are listed (about 4 s
    for 60,000 folders on a loaded 2-core machine; a container's image has far fewer)."""
    if not _world_writable:
        _world_writable.append(tuple(_walk_for_world_writable("/")))
    return _world_writable[0]


def _walk_for_world_writable(top: str) -> list[str]:
    import stat

    found, waiting = [], [top]
    while waiting:
        try:
            listing = os.scandir(waiting.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_mode & stat.S_IWOTH:
                    found.append(entry.path)
                if (info.st_mode & stat.S_IXOTH and info.st_nlink != 2
                        and entry.path not in NOT_WALKED):
                    waiting.append(entry.path)
    return sorted(found)


def remove_leftovers(uid: int, since: float) -> None:
    """Remove what ``uid`` (the unprivileged user of the child) created since ``since`` (a
    ``time.time()``) in every place everyone may write (:func:`world_writable_folders`: where
    the child could reach them, the uid drop without a private root or Landlock)."""
    import shutil

    for folder in world_writable_folders():
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid != uid or info.st_ctime < since - 1:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
