"""How much memory one call allocates at its peak: the ``tiling`` check's measurement (SPEC,
"What tiled means for grading"). Standard library only: the sandbox's child loads it by path,
the notebook's in-process grading imports it.

NumPy reports its buffers to ``tracemalloc``, so the peak of the allocations traced during the
call is what NumPy code held at once. Torch (and other frameworks) allocate outside it: their
code is called in a fork of this process made for that one call (Linux), where the kernel
starts the peak resident set (VmHWM) at the fork, so that its peak minus the resident set
before the call is what the call grew by. The fork's allocator gives freed memory back at
once (large blocks mapped apart, the heap trimmed), so that reused or retained memory shows
as it is used; pages of the libraries' code that the fork maps again as the call runs them
are subtracted (they are the process's code, not the call's data: the file-backed part of the
resident set at the end, counted whole, so the growth is never overstated). The fork's peak is
read from ``wait4`` (the kernel's, not the fork's word). Blocks under 128 KiB may still fill the free
space of pages this process keeps half used, unseen: a call is measured for its large arrays
(a 2048 x 2048 float32 matrix is 16 MiB), not for its small objects. Where a fork cannot be made or read,
that part is ``None`` and the check says it could not measure.

Measured here (torch 2.13, float32, n = m = 2048, one call each): tiled forwards with tiles of
16 to 128 and d = 16 or 64 grew by 0.0 to 1.0 MiB, a stripe of one query tile against every key
by 0.4 to 3.0 MiB, one that builds the 2048 x 2048 scores by 48 MiB; without the allocator
settings a stripe showed up to 46 MiB (freed blocks kept in the heap), and without the
subtraction every call 14 MiB more (the libraries' code paged in again).
"""

import ctypes
import json
import os
import select
import signal
import sys
import time
import tracemalloc
import types

#: frameworks whose arrays tracemalloc does not see
UNTRACED_FRAMEWORKS = ("torch", "jax", "tensorflow")
#: the measured call's own time limit where none is given (SPEC: 10 s)
SECONDS = 10.0
#: the fork's limit is CPU time (RLIMIT_CPU), so that a loaded machine decides nothing; the
#: wall clock, this many times as long, only stops a fork that sleeps or waits (the sandbox's
#: run and notebook cells use the same factor)
WALL_FACTOR = 4.0
#: the fork's allocator: blocks from this size mapped apart and unmapped when freed, the heap
#: trimmed above it (glibc's mallopt parameters M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, M_TOP_PAD)
_MALLOC_SETTINGS = ((-3, 128 * 1024), (-1, 128 * 1024), (-2, 0))
_STATUS_FIELDS = ("VmRSS", "RssAnon", "RssFile", "RssShmem")


class CallFailed(RuntimeError):
    """The measured call raised, or did not return, in the fork that ran it; ``kind`` is
    ``timeout`` or ``runtime-error``."""

    def __init__(self, message, kind="runtime-error"):
        super().__init__(message)
        self.kind = kind


def frameworks_of(function, loaded_here=False):
    """The frameworks tracemalloc cannot see that ``function`` uses: those its module's globals
    hold (for a class, its methods'; for a bound method, its function's), and with
    ``loaded_here`` (a process that holds the submission alone, the sandbox's child) every one
    loaded in this process. The sandbox's child and the notebook both decide by this."""
    names = set()
    for namespace in _namespaces(function):
        for value in list(namespace.values()):
            if isinstance(value, types.ModuleType):
                top = getattr(value, "__name__", "").split(".")[0]
                if top in UNTRACED_FRAMEWORKS:
                    names.add(top)
    if loaded_here:
        names.update(name for name in UNTRACED_FRAMEWORKS if name in sys.modules)
    return sorted(names)


def _namespaces(function):
    seen = []
    targets = [function]
    if isinstance(function, type):
        targets.extend(vars(function).values())
    for target in targets:
        target = getattr(target, "__func__", target)  # (staticmethod, classmethod, bound)
        namespace = getattr(target, "__globals__", None)
        if isinstance(namespace, dict) and all(namespace is not s for s in seen):
            seen.append(namespace)
    return seen


def measure(call, frameworks=(), seconds=SECONDS):
    """Call ``call()`` once and return (what it returned, the measurement): ``traced_peak`` (bytes
    traced by tracemalloc at the peak, above what was traced before), ``resident_growth`` (bytes
    the resident set grew by at its peak, or None, and ``why_not`` says why), ``frameworks`` (the untraced ones the code
    uses, ``frameworks_of``) and ``seconds``.

    Code that uses such a framework is called in a fork (``measure_forked``; what it returns is
    then None); where no fork can be made, it is not called at all and the measurement says so."""
    frameworks = list(frameworks)
    if frameworks:
        return None, measure_forked(call, frameworks, seconds)
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    started = time.perf_counter()
    try:
        returned = call()
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return returned, {"traced_peak": max(0, peak - base), "resident_growth": None,
                      "frameworks": [], "seconds": elapsed}


def measure_forked(call, frameworks, seconds=SECONDS):
    """The measurement of ``call()`` run in a fork of this process (see the module's
    docstring); ``resident_growth`` None where it cannot be read. Raises ``CallFailed`` when the
    call raised or did not return within ``seconds``."""
    unmeasured = {"traced_peak": None, "resident_growth": None,
                  "frameworks": list(frameworks), "seconds": 0.0,
                  "why_not": "this system does not let the grader run the call in a fork of "
                             "its process and read its resident memory"}
    libc = _libc()
    if libc is None or _status() is None or not hasattr(os, "fork"):
        return unmeasured
    libc.malloc_trim(0)
    reading, writing = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        return unmeasured
    if pid == 0:  # (the fork: never returns)
        os.close(reading)
        _run_in_fork(call, writing, libc, seconds)
    os.close(writing)
    try:
        before, after = _read_reports(reading, pid, seconds * WALL_FACTOR)
    except CallFailed as failed:
        os.close(reading)
        usage = _reap(pid)
        if failed.kind == "timeout" or _cpu_seconds(usage) >= seconds:
            raise CallFailed(f"the call did not return within {seconds:g} s",
                             "timeout") from None
        raise
    os.close(reading)
    usage = _reap(pid)
    if after.get("error"):
        raise CallFailed(f"the call raised {after['error']}")
    if after.get("imported"):  # (the modules' code and data, not the call's: not told apart)
        return {**unmeasured, "why_not": "the call imported modules as it ran (the first call "
                                         "of code that loads more on first use), whose memory "
                                         "cannot be told from the call's"}
    peak = usage.ru_maxrss * 1024 if usage is not None else 0
    if not peak or any(field not in before or field not in after for field in _STATUS_FIELDS):
        return unmeasured
    # (code paged in again is file-backed: its end value, counted whole, never overstates)
    resident_before = before["RssAnon"] + after["RssFile"] + after["RssShmem"]
    return {**unmeasured, "resident_growth": max(0, peak - resident_before), "why_not": None,
            "seconds": float(after.get("seconds", 0.0))}


def _run_in_fork(call, writing, libc, seconds):
    code = 0
    try:
        _prepare_fork(libc, seconds)
        modules = len(sys.modules)
        _send(writing, _status() or {})
        started = time.perf_counter()
        try:
            call()
            report = {**(_status() or {}), "seconds": time.perf_counter() - started,
                      "imported": len(sys.modules) > modules}
        except BaseException as exc:  # noqa: BLE001 - student code may raise anything
            report = {"error": type(exc).__name__}
        _send(writing, report)
    except BaseException:  # noqa: BLE001 - whatever happens, the fork ends here
        code = 70
    finally:
        os._exit(code)


def _prepare_fork(libc, seconds):
    """One thread for the framework's pool (a pool's threads do not survive a fork), the
    allocator that gives memory back, the time limit as CPU seconds."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(1)
    for parameter, value in _MALLOC_SETTINGS:
        libc.mallopt(parameter, value)
    libc.malloc_trim(0)
    limit = int(seconds) + 1
    import resource  # (Unix only, as fork is: the notebook's check runs on Windows too)

    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > limit:
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
        except (ValueError, OSError):
            pass


def _cpu_seconds(usage):
    return 0.0 if usage is None else usage.ru_utime + usage.ru_stime


def _read_reports(reading, pid, wall_seconds):
    """The fork's two reports (before and after the call); ``CallFailed`` when the second does
    not come before the wall-clock backstop (the fork is then killed)."""
    deadline = time.monotonic() + wall_seconds
    data = b""
    while data.count(b"\n") < 2:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([reading], [], [], max(0.0, left))
        if not ready:
            _kill(pid)
            raise CallFailed(f"the call did not return within {wall_seconds:g} s", "timeout")
        chunk = os.read(reading, 65536)
        if not chunk:
            break
        data += chunk
    lines = data.split(b"\n")
    if len(lines) < 3:
        raise CallFailed("the call ended the process")
    try:
        return json.loads(lines[0]), json.loads(lines[1])
    except ValueError:
        raise CallFailed("the call ended the process") from None


def _send(writing, report):
    data = (json.dumps(report) + "\n").encode()
    while data:
        data = data[os.write(writing, data):]


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(pid):
    """Kill the fork if it still runs, wait for it, and return its resource usage (None if it
    cannot be waited for)."""
    _kill(pid)
    while True:
        try:
            _, _, usage = os.wait4(pid, 0)
            return usage
        except InterruptedError:
            continue
        except ChildProcessError:
            return None


def _status():
    """The resident set's parts of this process, in bytes, from /proc/self/status; None."""
    found = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in _STATUS_FIELDS:
                    found[name] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return found if len(found) == len(_STATUS_FIELDS) else None


_libc_handle: list = []


def _libc():
    """The C library's malloc_trim and mallopt (glibc), or None."""
    if not _libc_handle:
        try:
            libc = ctypes.CDLL(None)
            _ = libc.malloc_trim, libc.mallopt
            _libc_handle.append(libc)
        except (OSError, AttributeError):
            _libc_handle.append(None)
    return _libc_handle[0]
