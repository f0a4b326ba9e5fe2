"""Starting a worker interpreter (``worker.py``), and the head start of a one-submission command.

Standard library only, and importable before the rest of the grader: ``grader.launch`` starts
the worker first thing, so that the interpreter and NumPy load in the child while this process
imports the command line and the grader; the run then takes it (``take_head_start``). No
student code runs in a worker before the run sends its setup frame.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from grader.sandbox.processes import child_environment, kill_run, own_children

WORKER = Path(__file__).with_name("worker.py")


class Spawned(NamedTuple):
    """A fresh worker, started but not yet told what to run, its two pipes and its output."""

    process: subprocess.Popen[bytes]
    request_write: int
    result_read: int
    marker: str
    #: this process's children before the worker: a run's clean-up never kills them
    spared: set[int]
    #: what the worker prints (its stdout and stderr): see ``output_file``
    output: int


def output_file() -> int:
    """A file for what a child prints, as an fd: in memory where the system has it (no file
    on disk is made or removed per run), else an unnamed temporary file. The child's limit on
    file sizes bounds it either way."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create("attention-grader-output", os.MFD_CLOEXEC)
        except OSError:
            pass
    with tempfile.TemporaryFile() as handle:
        return os.dup(handle.fileno())


def printed(output: int, most: int) -> bytes:
    """The first ``most`` bytes a child printed into ``output`` (its ``output_file``)."""
    return os.pread(output, most, 0)


def spawn_worker(workdir: Path) -> Spawned:
    """Start a worker interpreter in ``workdir``; it waits for its setup frame."""
    marker = secrets.token_hex(8)
    request_read, request_write = os.pipe()
    result_read, result_write = os.pipe()
    spared = own_children()
    output = output_file()
    process = subprocess.Popen(
        [sys.executable, "-I", "-B", str(WORKER), str(request_read), str(result_write)],
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env=child_environment(str(workdir), marker),
        pass_fds=(request_read, result_write),
        start_new_session=True,
    )
    os.close(request_read)
    os.close(result_write)
    return Spawned(process, request_write, result_read, marker, spared, output)


#: the folder of a finished run that nothing of the run touched, for this process's next run
#: (with the pid it is for: a process forked from this one, a pool worker, inherits the name)
_spare_base: tuple[int, Path] | None = None


def new_base() -> Path:
    """A run's private folder: ``work`` (the child's) and ``root`` (its new root's mount)."""
    global _spare_base
    if _spare_base is not None:
        (owner, base), _spare_base = _spare_base, None
        if owner == os.getpid() and base.is_dir():
            return base
    base = Path(tempfile.mkdtemp(prefix="attention-grader-"))
    for folder in ("work", "root"):
        (base / folder).mkdir(mode=0o700)
    # searchable, not listable: a run that continues as a uid of its own reaches its working
    # directory by its absolute path (Python's import system, tempfile), and nothing else here
    base.chmod(0o711)
    return base


def done_with_base(base: Path, *, untouched: bool) -> None:
    """Remove a finished run's folder, or, when ``untouched`` (each of the run's children had
    a root and a working directory of its own, so it wrote nothing here), keep it for the next
    run of this process: creating and removing folders costs a run more than a millisecond on
    a busy ext4."""
    global _spare_base
    if untouched and (_spare_base is None or _spare_base[0] != os.getpid()):
        _finalize_at_exit()
        _spare_base = (os.getpid(), base)
        return
    shutil.rmtree(base, ignore_errors=True)


def _remove_spare_base() -> None:
    global _spare_base
    if _spare_base is not None and _spare_base[0] == os.getpid():
        shutil.rmtree(_spare_base[1], ignore_errors=True)
    _spare_base = None


#: the process that registered its clean-up at exit (a fork registers its own)
_finalizing_in: int | None = None


def _finalize_at_exit() -> None:
    """Remove the spare folder when this process ends: also a pool worker, which exits without
    running ``atexit`` handlers (multiprocessing runs its own finalizers, here and there)."""
    global _finalizing_in
    if _finalizing_in != os.getpid():
        import multiprocessing.util

        multiprocessing.util.Finalize(None, _remove_spare_base, exitpriority=1)
        _finalizing_in = os.getpid()


_head_start: tuple[Path, Spawned] | None = None


def head_start() -> None:
    """Start the next run's worker now (unused, it is killed when this process exits)."""
    global _head_start
    if _head_start is None:
        base = new_base()
        _head_start = (base, spawn_worker(base / "work"))
        atexit.register(_drop_head_start)


def take_head_start(*, reusable: bool = True) -> tuple[Path, Spawned | None]:
    """A run's folder, with the worker started ahead in it if there is one still alive (and
    ``reusable``: a run through the fork server does not use it)."""
    global _head_start
    taken, _head_start = _head_start, None
    if taken is not None and reusable and taken[1].process.poll() is None:
        return taken
    if taken is not None:
        _discard(*taken)
    return new_base(), None


def _drop_head_start() -> None:
    global _head_start
    if _head_start is not None:
        _discard(*_head_start)
        _head_start = None


def _discard(base: Path, spawned: Spawned) -> None:
    kill_run(spawned.process.pid, spawned.marker, spawned.spared, settle=False)
    spawned.process.wait()
    for fd in (spawned.request_write, spawned.result_read, spawned.output):
        try:
            os.close(fd)
        except OSError:
            pass
    shutil.rmtree(base, ignore_errors=True)
