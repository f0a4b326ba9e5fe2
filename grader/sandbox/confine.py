"""The child's confinement, applied before any student code runs: each kernel layer this machine
allows, and the names of those that took effect.

In order:

1. ``pid-namespace``, ``mount-namespace``, ``network-namespace``: the child unshares them (as
   root directly, otherwise inside a user namespace) and forks a tiny init that only reaps
   (pid 1: when it dies the kernel kills everything the submission started), which forks the
   runner, which goes on here. The process that called :func:`confine` stays outside, waits
   for the init (which ends with the runner) and exits as the runner did. Where the fork server may make pid namespaces (root), the run's
   first process is pid 1 of its own already, and runs the submission itself: it forks nothing
   (:class:`RunNamespaces`). The runner sees only its own processes (a fresh ``/proc``): no
   ancestor's ``cmdline``, ``environ`` or ``mem``, no classmate to signal.
2. ``read-only-root``: the runner pivots into a new root holding read-only binds of the system
   and Python directories only, the grader's own packages hidden under empty mounts, a few
   device nodes, a read-only ``/proc``, and one writable place: its working directory, with a
   private ``/tmp`` (also ``/var/tmp`` and ``/dev/shm``) inside it. Home directories, classmates'
   files, the grader's configuration and secrets are simply absent.
3. ``unprivileged-uid`` (root: continue as ``nobody``, possible now that the new root exposes the
   interpreter) or ``no-capabilities`` (every capability dropped, the bounding set too).
4. ``landlock``: where the kernel has it, the same allow-list again (and only it) for the file
   system, no TCP, and no signals or abstract sockets to processes outside the child's domain:
   the filesystem layer where namespaces are not allowed (a CI runner as an ordinary user).
5. ``seccomp``: no socket but AF_UNIX (no IP, netlink, packet, ...), no new SIGCHLD action
   (ignoring it would hide children's CPU time), tracing, other processes' memory, inotify, mounting, new
   namespaces, BPF or keys; no signals to the grader's processes.

Standard library only: ``worker.py`` loads this file by path, and nothing here imports the
grader package.
"""

import collections
import contextlib
import ctypes
import errno
import os
import resource
import signal
import stat
import struct
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 1, 2, 4
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE = 1
SCMP_CMP_MASKED_EQ = 7
UNPRIVILEGED_ID = 65534  # nobody
#: processes a run's own uid may have at once (with a uid per run, a bound per run)
MAX_PROCESSES = 256
_SYSCALLS = {  # the few not reachable through libc wrappers everywhere (same numbers on arm64)
    "mount_setattr": 442, "landlock_create_ruleset": 444, "landlock_add_rule": 445,
    "landlock_restrict_self": 446, "pivot_root": {"x86_64": 155, "aarch64": 41},
    "capset": {"x86_64": 126, "aarch64": 91},
}

#: system directories and files a Python program may need, exposed read-only
SYSTEM_PATHS = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda",
    "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
    "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
    "/etc/ssl", "/etc/fonts", "/etc/mime.types", "/etc/os-release", "/etc/matplotlibrc",
    "/sys/devices/system/cpu",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")
PRIVATE_TMP_NAME = ".tmp"


def _syscall_number(name):
    number = _SYSCALLS[name]
    if isinstance(number, dict):
        return number.get(os.uname().machine, -1)
    return number


_libc_handle: list = []


def _libc():
    """The C library, loaded once (in the fork server, before it forks: each fork then finds
    its functions already looked up)."""
    if not _libc_handle:
        _libc_handle.append(ctypes.CDLL(None, use_errno=True))
    return _libc_handle[0]


def _check(result, what):
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


# -- what the child may see -------------------------------------------------------------------

def _inside(path, roots):
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def readable_paths(forbidden_roots):
    """Absolute paths to expose read-only: the system's, and the interpreter's (prefixes and
    import path), except entries that hold the grader's own checkout."""
    forbidden = [os.path.realpath(p) for p in forbidden_roots]
    homes = {os.path.dirname(p) for p in forbidden}
    prefixes = {os.path.abspath(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix,
                                             sys.base_exec_prefix)}
    python = [os.path.dirname(os.path.abspath(sys.executable)),
              os.path.dirname(os.path.realpath(sys.executable)), *prefixes]
    for entry in sys.path:
        entry = os.path.abspath(entry or ".")
        if not os.path.exists(entry):
            continue
        real = os.path.realpath(entry)
        holds_checkout = any(_inside(home, [real]) for home in homes)
        if holds_checkout and not _inside(real, [os.path.realpath(p) for p in prefixes]):
            continue  # a source checkout on the path (editable install): not the student's
        python += [entry, real]
    chosen = []
    for path in [*SYSTEM_PATHS, *python]:
        if os.path.lexists(path) and path not in chosen:
            chosen.append(path)
    return chosen


class Prepared(collections.namedtuple("Prepared", "forbidden readable root_steps")):
    """What every run of one grader works out alike: the grader's roots (real paths), the
    paths to expose read-only, and the steps that make the new root's mount points (those
    paths that are not inside another: :func:`_root_steps`)."""


_prepared: dict = {}


def prepare(forbidden_roots, needed=()):
    """:class:`Prepared` for these roots, worked out once per process: the fork server calls
    this before it forks, so each fork inherits it instead of statting every path again. Also
    learns, once, whether an unprivileged uid can reach the ``needed`` paths."""
    asked = tuple(forbidden_roots)
    if asked not in _prepared:
        forbidden = [os.path.realpath(p) for p in asked]
        readable = readable_paths(forbidden)
        _prepared[asked] = Prepared(forbidden, readable, _root_steps(_without_nested(readable)))
    reachable_by_anyone(needed)
    return _prepared[asked]


def _without_nested(paths):
    """Drop paths already inside another (symlinked system paths are kept: they are links)."""
    kept = []
    for path in sorted(paths, key=len):
        is_system_link = os.path.islink(path) and path in SYSTEM_PATHS
        if is_system_link or not _inside(path, [p for p in kept if not os.path.islink(p)]):
            kept.append(path)
    return kept


# -- namespaces -------------------------------------------------------------------------------

def _write_id_maps(uid, gid):
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with contextlib.suppress(OSError), open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


ALL_NAMESPACES = ["pid-namespace", "mount-namespace", "network-namespace", "ipc-namespace"]
#: where a run cannot have them all: the namespaces it may still have, fewest lost first
PARTIAL_NAMESPACES = ((CLONE_NEWNET | CLONE_NEWIPC, ["network-namespace", "ipc-namespace"]),
                      (CLONE_NEWNET, ["network-namespace"]))


def _unshare(libc):
    """Enter new namespaces; return the names of those entered (empty when none could be)."""
    full = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC
    if libc.unshare(full) == 0:
        return list(ALL_NAMESPACES)
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWUSER | full) == 0:
        _write_id_maps(uid, gid)
        return list(ALL_NAMESPACES)
    for flags, names in PARTIAL_NAMESPACES:
        if libc.unshare(flags) == 0:
            return names
        if libc.unshare(CLONE_NEWUSER | flags) == 0:
            _write_id_maps(uid, gid)
            return names
    return []


class RunNamespaces:
    """Where the fork server may make pid namespaces (root): it makes one for each run's first
    process, which is then the namespace's init and runs the submission itself (``split``). A
    run costs two processes less than when it makes its namespaces itself (:func:`confine`:
    an init, the runner and a relay), and one less than with an init of its own: a fork of the
    server, with its copy of the server's memory, is the costly part of a run. Elsewhere (no
    privilege, namespaces refused) ``enter`` says no and nothing changes."""

    def __init__(self):
        self.libc = _libc()
        try:
            self.own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.own = None
        self.armed = None  # the signals whose handlers every run's pid 1 inherits

    def enter(self):
        """In the server, before a fork: is its next child the first of a new pid namespace?"""
        if self.own is None or self.libc.unshare(CLONE_NEWPID) != 0:
            return False
        if self.armed is None:  # (once, here: every later fork inherits them)
            self.armed = _arm_ending_signals(self.libc)
        return True

    def leave(self):
        """In the server, after that fork: its later children are in its own namespace again
        (else the next run's first process would join this run's namespace)."""
        if self.libc.setns(self.own, CLONE_NEWPID) != 0:
            os._exit(70)  # (the grader starts a new server)

    def split(self, server, status_write):
        """In that fork (pid 1): make the run's other namespaces and return their names; the
        submission runs here. When this process ends, the kernel ends everything in the
        namespace with it. A signal it sends itself ends it as it would end any other process
        (:func:`_arm_ending_signals`), and the server hears of it through ``status_write``."""
        _die_with_parent(self.libc)
        if os.getppid() != server:
            os._exit(70)
        entered = ["pid-namespace"]
        # a network namespace of its own, as every other namespace: one shared by a server's
        # runs (it saved about 0.5 ms a run) let a dying run's sockets, listed in /proc/net,
        # reach the next run
        for flags, names in ((CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC, ALL_NAMESPACES[1:]),
                             *PARTIAL_NAMESPACES):
            if self.libc.unshare(flags) == 0:
                entered += names
                break
        global _status_pipe
        _status_pipe = status_write  # (the handlers armed in the server now pass deaths on)
        return entered

    def disarm(self):
        """In a fork that is not the first of a namespace: every signal's default again."""
        for signum in self.armed or ():
            signal.signal(signum, signal.SIG_DFL)


#: the signals whose default is to end a process (but SIGKILL and SIGSTOP, which nothing can
#: catch, and SIGINT, SIGPIPE, SIGXFSZ, SIGALRM and SIGPROF, which the runner handles or ignores)
_ENDING_SIGNALS = tuple(getattr(signal, name) for name in (
    "SIGHUP", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGUSR1",
    "SIGSEGV", "SIGUSR2", "SIGTERM", "SIGSTKFLT", "SIGXCPU", "SIGVTALRM", "SIGIO", "SIGPWR",
    "SIGSYS") if hasattr(signal, name)) + (
    tuple(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)) if hasattr(signal, "SIGRTMIN") else ())
#: the signals of a fault: their handler must be reset as it runs, or the faulting instruction
#: would run again, into the same handler, forever
_FAULT_SIGNALS = frozenset(getattr(signal, name) for name in (
    "SIGILL", "SIGTRAP", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGSYS") if hasattr(signal, name))
SA_ONSTACK, SA_RESETHAND = 0x08000000, 0x80000000


#: in the first process of a run's pid namespace, where a death by its own signal is told
_status_pipe = None


def _pass_death_on(signum, frame):
    """The handler of every ending signal (see :func:`_arm_ending_signals`)."""
    if _status_pipe is not None and os.getpid() == 1:
        with contextlib.suppress(OSError):
            os.write(_status_pipe, struct.pack("i", signum))
        os._exit(0)
    # the server, or a process the submission forked: the signal's default, as for any process
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _arm_ending_signals(libc):
    """The init of a pid namespace ignores each signal from inside its namespace, its own
    included, that it has no handler for: ``os.kill(os.getpid(), signal.SIGABRT)`` would do
    nothing. So each ending signal gets a handler that passes the death on (as its wait status,
    through the status pipe) and ends the process. A fault (a bad address in C code, say) is
    forced on it by the kernel, and ends it by its default action: its signal's handler is a
    one-shot one, reset to that default as it runs, and where that cannot be had the signal
    keeps its default (then only a fault's signal that the process sends itself is lost).

    Armed once in the fork server, whose forks inherit the handlers (about 50 signals: 0.3 ms
    a run); where no run's pid 1 is the process, a handler ends it by the signal's default.
    Returns the signals armed."""
    armed = []
    for signum in _ENDING_SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            if signal.getsignal(signum) != signal.SIG_DFL:
                continue  # (ignored or handled already: as for any other process)
            signal.signal(signum, _pass_death_on)
            if signum in _FAULT_SIGNALS and not _one_shot(libc, signum):
                signal.signal(signum, signal.SIG_DFL)
                continue
            armed.append(signum)
    return tuple(armed)


def _one_shot(libc, signum):
    """Make the handler of ``signum`` one-shot (SA_RESETHAND). C's ``struct sigaction`` is the
    handler, a 1024-bit mask, then the flags: False where it is not (CPython sets SA_ONSTACK,
    which is checked for), or where the C library refuses."""
    action = ctypes.create_string_buffer(256)
    flags = ctypes.c_uint.from_buffer(action, ctypes.sizeof(ctypes.c_void_p) + 128)
    if libc.sigaction(signum, None, action) != 0 or not flags.value & SA_ONSTACK:
        return False
    flags.value |= SA_RESETHAND
    return libc.sigaction(signum, action, None) == 0


def _die_with_parent(libc):
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _close_all_fds(keep=None):
    top = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024
    if keep is None:
        os.closerange(0, top)
    else:
        os.closerange(0, keep)
        os.closerange(keep + 1, top)


def _init(runner, status_write):
    """Pid 1 of the namespace, the runner's parent: reap orphans; when the runner ends, tell
    its wait status through ``status_write`` and end, and with it (the kernel's doing) every
    process in the namespace. It dies with its parent (the relay, outside)."""
    _close_all_fds(keep=status_write)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        except BaseException:  # noqa: BLE001 - nothing may end the init but its parent's death
            continue
        if pid == runner:
            with contextlib.suppress(OSError):
                os.write(status_write, struct.pack("i", status))
            os._exit(0)


def _relay(init, status_read):
    """The process outside: wait for the init (which ends when the runner does), exit as the
    runner did (as the init did, where it was killed before it could say)."""
    _close_all_fds(keep=status_read)
    while True:
        try:
            _, status = os.waitpid(init, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            status = 0
            break
    with contextlib.suppress(OSError):
        told = os.read(status_read, 4)
        if len(told) == 4:
            status = struct.unpack("i", told)[0]
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def _split_into_namespace(libc):
    """Fork the init into the new pid namespace, and the runner from it; only the runner
    returns. The runner is the init's child, inside the namespace: when the relay dies (a batch
    killed with ``kill -9``), the init dies with it, the kernel kills the runner, and the dying
    init reaps it. (With the runner a child of the relay, its corpse went to whoever adopted
    it outside, and the dying init waited for that one to reap it: a subreaper that never
    did, such as a process that imported the grader, kept the run's first process there.)"""
    status_read, status_write = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(status_read)
        _die_with_parent(libc)
        runner = os.fork()
        if runner == 0:
            os.close(status_write)
            _die_with_parent(libc)
            return
        _init(runner, status_write)
    os.close(status_write)
    _relay(init, status_read)


# -- the new root -----------------------------------------------------------------------------

def _encode(text):
    return None if text is None else os.fsencode(text)


def _mount(libc, source, target, fstype, flags, data=None):
    _check(libc.mount(_encode(source), _encode(target), _encode(fstype), ctypes.c_ulong(flags),
                      _encode(data)), f"mount {target}")


#: mount_setattr's ``struct mount_attr`` for a read-only bind (made once: the kernel only reads it)
_READ_ONLY = struct.pack("QQQQ", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
_READ_ONLY_ATTR = ctypes.create_string_buffer(_READ_ONLY, len(_READ_ONLY))


def _make_readonly(libc, target):
    """Read-only, recursively (mount_setattr), or the top mount only on older kernels."""
    done = libc.syscall(_syscall_number("mount_setattr"), AT_FDCWD, os.fsencode(target),
                        AT_RECURSIVE, _READ_ONLY_ATTR, ctypes.c_size_t(len(_READ_ONLY)))
    if done != 0:
        _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


class Step(collections.namedtuple("Step", "kind path source directories empty_file")):
    """One mount point of the new root: ``kind`` is ``private-tmp``, ``read-only``, ``device``
    or ``link``; ``path`` is its place inside the new root, made after ``directories`` (those
    no earlier step made) and, for a file, ``empty_file``."""


def _root_steps(mounted):
    """The new root's skeleton, in order: the private ``/tmp`` binds first (a venv may lie under
    ``/tmp``), then each system path bound read-only (or linked, as it is a link), then the
    devices. Every directory is made once, parents first: a run makes its mount points without
    looking anything up."""
    made = {"/"}
    steps = []

    def new_directories(path):
        missing = []
        while path not in made:
            missing.append(path)
            path = os.path.dirname(path)
        made.update(missing)
        return tuple(reversed(missing))

    def add(kind, path, source):
        if kind == "link":
            steps.append(Step(kind, path, os.readlink(path),
                              new_directories(os.path.dirname(path)), False))
        elif kind == "private-tmp" or os.path.isdir(source):
            steps.append(Step(kind, path, source, new_directories(path), False))
        else:
            steps.append(Step(kind, path, source, new_directories(os.path.dirname(path)), True))

    for path in PRIVATE_TMP:
        add("private-tmp", path, None)
    for path in mounted:
        add("link" if os.path.islink(path) else "read-only", path, path)
    for device in DEVICES:
        add("device", device, device)
    return steps


def _mkdir(path):
    with contextlib.suppress(FileExistsError):  # (a reused private /tmp may have it)
        os.mkdir(path)


def _take_step(libc, newroot, step, private_tmp):
    target = newroot + step.path
    for directory in step.directories:
        _mkdir(newroot + directory)
        os.chmod(newroot + directory, 0o755)  # (every user may pass, whatever the umask)
    if step.kind == "link":
        os.symlink(step.source, target)
        return
    if step.empty_file:
        os.close(os.open(target, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    _mount(libc, step.source or private_tmp, target, None, MS_BIND | MS_REC)
    if step.kind == "read-only":
        _make_readonly(libc, target)


def _build_root(libc, newroot, workdir, steps, hidden, disk_bytes):
    """Mount the child's whole view of the file system under ``newroot`` and switch to it. Its
    one writable place, the working directory with its private ``/tmp``, is a file system of
    ``disk_bytes`` of its own (in this namespace only): what a run writes, in all, is bounded,
    and gone with it."""
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    if disk_bytes:
        _mount(libc, "tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV,
               f"mode=0700,size={int(disk_bytes)}")
    _mount(libc, "tmpfs", newroot, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    private_tmp = os.path.join(workdir, PRIVATE_TMP_NAME)
    _mkdir(private_tmp)
    for step in steps:
        if step.kind in ("read-only", "device"):
            with contextlib.suppress(OSError):  # one unreadable path costs only itself
                _take_step(libc, newroot, step, private_tmp)
        else:
            _take_step(libc, newroot, step, private_tmp)
    os.makedirs(newroot + workdir, exist_ok=True)
    _mount(libc, workdir, newroot + workdir, None, MS_BIND | MS_REC)
    os.makedirs(newroot + "/proc", exist_ok=True)
    with contextlib.suppress(OSError):  # refused where /proc is partly masked (containers)
        _mount(libc, "proc", newroot + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC
               | MS_RDONLY)
    for path in hidden:
        if os.path.isdir(newroot + path):
            _mount(libc, "tmpfs", newroot + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                   "mode=0555,size=4k")
    os.chdir(newroot)
    _check(libc.syscall(_syscall_number("pivot_root"), b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")
    _mount(libc, None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(workdir)


# -- privileges -------------------------------------------------------------------------------

def world_readable(path):
    """Can an unprivileged user reach ``path`` (every directory on the way searchable)?"""
    path = os.path.realpath(path)
    while True:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return False
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return False
        if not mode & stat.S_IROTH:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


_reachable: dict = {}


def reachable_by_anyone(paths):
    """Are all ``paths`` world-readable? (Learnt once per process: see :func:`prepare`.)"""
    key = tuple(paths)
    if key not in _reachable:
        _reachable[key] = all(world_readable(p) for p in key)
    return _reachable[key]


def drop_to_nobody(workdir, needed, uid=UNPRIVILEGED_ID, reachable=None):
    """As root, continue as the unprivileged ``uid`` (owning ``workdir``), where the ``needed``
    paths (the interpreter, NumPy) are readable by it (``reachable``: decided already, where
    this process sees another root than the server that learnt it). The grader gives each run
    a uid of its own: runs at the same time cannot signal each other or read each other's
    ``/proc``."""
    if reachable is None:
        reachable = reachable_by_anyone(needed)
    if os.geteuid() != 0 or not reachable:
        return False
    try:
        for root, dirs, files in os.walk(workdir):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.lchown(name, uid, uid)
        os.chmod(workdir, 0o700)  # its own, and no other run's
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))
    except OSError:
        return os.geteuid() != 0
    return True


def drop_capabilities(libc):
    """No capability left, none to regain by running a program (bounding set emptied)."""
    for capability in range(64):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two empty {effective, permitted, inheritable} sets
    return libc.syscall(_syscall_number("capset"), ctypes.create_string_buffer(header, 8),
                        ctypes.create_string_buffer(data, 24)) == 0


# -- Landlock ---------------------------------------------------------------------------------

LANDLOCK_READ_DIR = 1 << 3
LANDLOCK_READ = (1 << 0) | (1 << 2) | LANDLOCK_READ_DIR  # execute, read file, read dir
LANDLOCK_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)


def _landlock_fs_rights(abi):
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= 1 << 13  # refer
    if abi >= 3:
        rights |= 1 << 14  # truncate
    if abi >= 5:
        rights |= 1 << 15  # ioctl on devices
    return rights


def _landlock_rules(forbidden, readable, writable, all_rights):
    """(path, rights) rules. A directory holding a forbidden root may be listed, and everything
    in it read except that root (Python lists a directory to import from it)."""
    rules = []

    def add(path, depth=0):
        real = os.path.realpath(path)
        if _inside(real, forbidden):
            return
        if depth < 4 and os.path.isdir(path) and any(_inside(f, [real]) for f in forbidden):
            rules.append((path, LANDLOCK_READ_DIR))
            with contextlib.suppress(OSError):
                for name in os.listdir(path):
                    add(os.path.join(path, name), depth + 1)
            return
        rules.append((path, LANDLOCK_READ))

    for path in readable:
        add(path)
    rules += [(path, all_rights) for path in writable]
    return rules


def prepare_landlock(libc, forbidden, readable, writable):
    """A Landlock ruleset of the rules (its fd), or None where Landlock is missing or a
    writable place could not be ruled (never a partial layer). Made while this process can still
    open every rule's path: before the uid drop, which loses access to the run's folder."""
    create = _syscall_number("landlock_create_ruleset")
    abi = libc.syscall(create, None, ctypes.c_size_t(0), 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return None
    fs_rights = _landlock_fs_rights(abi)
    attr = struct.pack("Q", fs_rights)
    if abi >= 4:
        attr += struct.pack("Q", 0b11)  # TCP bind and connect: no rule, so none allowed
    if abi >= 6:
        attr += struct.pack("Q", 0b11)  # scoped: abstract unix sockets, signals
    ruleset = libc.syscall(create, ctypes.create_string_buffer(attr, len(attr)),
                           ctypes.c_size_t(len(attr)), 0)
    if ruleset < 0:
        return None
    for path, rights in _landlock_rules(forbidden, readable, writable, fs_rights):
        added = _add_landlock_rule(libc, ruleset, path, rights, fs_rights)
        if not added and path in writable[:1]:  # the working directory: required
            os.close(ruleset)
            return None
    return ruleset


def _add_landlock_rule(libc, ruleset, path, rights, fs_rights):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= LANDLOCK_FILE_RIGHTS & fs_rights
        rule = struct.pack("=Qi", rights, fd)
        return libc.syscall(_syscall_number("landlock_add_rule"), ruleset, 1,
                            ctypes.create_string_buffer(rule, len(rule)), 0) == 0
    finally:
        os.close(fd)


def restrict_landlock(libc, ruleset):
    """Enforce a prepared ruleset on this process; True when Landlock took effect."""
    if ruleset is None:
        return False
    try:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        return libc.syscall(_syscall_number("landlock_restrict_self"), ruleset, 0) == 0
    finally:
        os.close(ruleset)


# -- seccomp ----------------------------------------------------------------------------------

class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


DENIED_SYSCALLS = (
    b"ptrace", b"process_vm_readv", b"process_vm_writev", b"inotify_init", b"inotify_init1",
    b"inotify_add_watch", b"tkill", b"pidfd_send_signal", b"pidfd_open", b"pidfd_getfd",
    b"mount", b"umount2", b"pivot_root", b"chroot", b"unshare", b"setns", b"mount_setattr",
    b"move_mount", b"open_tree", b"fsopen", b"fsconfig", b"fsmount", b"fspick", b"bpf",
    b"perf_event_open", b"keyctl", b"add_key", b"request_key", b"userfaultfd", b"kcmp",
    b"name_to_handle_at", b"open_by_handle_at", b"syslog", b"acct", b"swapon", b"swapoff",
    b"reboot", b"kexec_load", b"init_module", b"finit_module", b"delete_module",
)


def ancestors(start=None):
    """The pids and process groups of our parent, its parent, ... up to init (those visible),
    but for our own process group; with ``start``, of that process and its ancestors, all of
    their groups (what a child of ``start`` in a session of its own finds)."""
    pids, groups, pid = [], set(), os.getppid() if start is None else start
    while pid > 0 and pid not in pids and len(pids) < 64:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            pid = int(fields[1])
            groups.add(int(fields[2]))
        except (OSError, ValueError, IndexError):
            break
    return pids, sorted(groups - ({os.getpgrp()} if start is None else set()))


#: System V and POSIX IPC: without an IPC namespace of its own, what a run leaves there would
#: outlive it and reach the next student's run
IPC_SYSCALLS = (
    b"shmget", b"shmat", b"shmdt", b"shmctl", b"msgget", b"msgsnd", b"msgrcv", b"msgctl",
    b"semget", b"semop", b"semtimedop", b"semctl", b"mq_open", b"mq_unlink", b"mq_timedsend",
    b"mq_timedreceive", b"mq_notify", b"mq_getsetattr",
)


SECCOMP_SET_MODE_FILTER = 1
_SYSCALLS["seccomp"] = {"x86_64": 317, "aarch64": 277}


class _FilterProgram(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


#: compiled filters by (protected, deny_ipc): the fork server compiles them once (``warm``), so
#: that each run only loads its filter (compiling took a sixth of a batch run's time)
_programs: dict = {}


def _key(protected, deny_ipc):
    pids, groups = protected
    return tuple(pids), tuple(groups), bool(deny_ipc)


def seccomp_program(protected, deny_ipc=False):
    """The BPF program (bytes) that denies the calls above (EACCES) and signals to the
    ``protected`` (pids, process groups) and to everyone (``kill(-1)``) (EPERM), with
    ``deny_ipc`` System V and POSIX IPC as well; compiled by libseccomp, None without it."""
    key = _key(protected, deny_ipc)
    if key not in _programs:
        _programs[key] = _compile_seccomp(protected, deny_ipc)
    return _programs[key]


def _compile_seccomp(protected, deny_ipc):
    import socket

    try:
        seccomp = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return None
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_init.argtypes = [ctypes.c_uint32]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    seccomp.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                               ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    seccomp.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    seccomp.seccomp_release.argtypes = [ctypes.c_void_p]
    context = seccomp.seccomp_init(SCMP_ACT_ALLOW)
    if not context:
        return None
    deny = 0x00050000 | errno.EACCES  # SCMP_ACT_ERRNO(EACCES)
    ok = True
    try:
        # sockets of one family only: AF_UNIX (its abstract names scoped by a network
        # namespace or Landlock, its paths by the file system layers); IP, netlink (a
        # NETLINK_USERSOCK port is a channel between concurrent runs), packet, vsock, the
        # kernel's crypto sockets and the rest are denied
        for name in (b"socket", b"socketpair"):
            number = seccomp.seccomp_syscall_resolve_name(name)
            rule = (_ArgCmp * 1)(_ArgCmp(0, SCMP_CMP_NE, socket.AF_UNIX, 0))
            ok &= seccomp.seccomp_rule_add_array(context, deny, number, 1, rule) == 0
        for name in DENIED_SYSCALLS + (IPC_SYSCALLS if deny_ipc else ()):
            number = seccomp.seccomp_syscall_resolve_name(name)
            if number >= 0:
                ok &= seccomp.seccomp_rule_add_array(context, deny, number, 0, None) == 0
        refuse = 0x00050000 | errno.EPERM
        # no new action for SIGCHLD: ignoring it (or SA_NOCLDWAIT) has the kernel reap the
        # children, whose CPU time then reaches nobody's cutime, and so no run's budget
        number = seccomp.seccomp_syscall_resolve_name(b"rt_sigaction")
        rule = (_ArgCmp * 2)(_ArgCmp(0, SCMP_CMP_MASKED_EQ, 0xFFFFFFFF, signal.SIGCHLD),
                             _ArgCmp(1, SCMP_CMP_NE, 0, 0))
        ok &= seccomp.seccomp_rule_add_array(context, refuse, number, 2, rule) == 0
        pids, groups = protected
        targets = [-1, *pids, *(-pid for pid in pids), *(-group for group in groups)]
        for name in (b"kill", b"tgkill", b"rt_sigqueueinfo", b"rt_tgsigqueueinfo"):
            number = seccomp.seccomp_syscall_resolve_name(name)
            for target in targets if number >= 0 else ():
                # pid_t is 32 bits: compare the low half, whatever the upper half holds
                rule = (_ArgCmp * 1)(_ArgCmp(0, SCMP_CMP_MASKED_EQ, 0xFFFFFFFF,
                                             target & 0xFFFFFFFF))
                ok &= seccomp.seccomp_rule_add_array(context, refuse, number, 1, rule) == 0
        if not ok:
            return None
        read, write = os.pipe()
        try:
            exported = seccomp.seccomp_export_bpf(context, write) == 0
            os.close(write)
            write = -1
            chunks = []
            while chunk := os.read(read, 65536):
                chunks.append(chunk)
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)
        return b"".join(chunks) if exported else None
    finally:
        seccomp.seccomp_release(context)


def seccomp_filter(protected, deny_ipc=False):
    """Load the filter of ``seccomp_program`` on this process (no_new_privs set first); True
    when it took effect."""
    program = seccomp_program(protected, deny_ipc)
    if not program or len(program) % 8:
        return False
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    code = ctypes.create_string_buffer(program, len(program))
    fprog = _FilterProgram(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
    return libc.syscall(_syscall_number("seccomp"), SECCOMP_SET_MODE_FILTER, 0,
                        ctypes.byref(fprog)) == 0


def warm(own_pid):
    """In the fork server: compile, once, the filters its forks will load (inside a pid
    namespace nothing outside is protected; without one, the server and its ancestors are)."""
    for deny_ipc in (False, True):
        seccomp_program(([], []), deny_ipc)
        seccomp_program(ancestors(start=own_pid), deny_ipc)
    libc = _libc()
    for name in ("unshare", "mount", "umount2", "syscall", "prctl"):
        getattr(libc, name)  # (looked up once, here)


# -- all together -----------------------------------------------------------------------------

FS_LAYERS = ("read-only-root", "landlock", "unprivileged-uid")


def confine(options, needed, entered=None):
    """Apply every layer allowed here, in order; return the names of those in effect.

    ``options``: ``workdir`` and ``newroot`` (an empty directory for the new root's mount),
    ``forbidden_roots`` (the grader's packages), ``skip`` (layers not to try), ``uid`` (the
    run's own unprivileged user, for the drop as root) and ``disk_bytes`` (what the run may
    write in all, where it has its own root). ``needed``: paths that must stay readable for the
    uid drop (the interpreter, NumPy). May fork (see the module's docstring): only the process
    that will run the submission returns. ``entered``: the namespaces this process is in
    already (:class:`RunNamespaces`), none to make here.
    """
    try:
        libc = _libc()
    except OSError:
        return []
    skip = set(options.get("skip") or ())
    workdir = os.path.realpath(options["workdir"])
    shared = prepare(options.get("forbidden_roots") or (), needed)
    forbidden = shared.forbidden
    active = []
    if entered is None:
        entered = _unshare(libc) if "namespaces" not in skip else []
        if "pid-namespace" in entered:
            _split_into_namespace(libc)
    active += entered
    # in a pid namespace of its own no process outside can even be named; elsewhere the
    # grader's are protected (looked up before /proc could be replaced)
    protected = ([], []) if "pid-namespace" in entered else ancestors()
    if "mount-namespace" in entered and "read-only-root" not in skip:
        try:
            _build_root(libc, os.path.realpath(options["newroot"]), workdir, shared.root_steps,
                        forbidden, options.get("disk_bytes"))
            active.append("read-only-root")
        except OSError:
            pass
    own_root = "read-only-root" in active
    writable = [workdir, *(PRIVATE_TMP if own_root else ()), *DEVICES]
    # in its own root, everything it sees may be read; elsewhere only the allow-list and its
    # own /proc entry
    visible = ["/"] if own_root else [*shared.readable, "/proc/self"]
    hidden = [] if own_root else forbidden  # (in its own root they are empty mounts already)
    # the rules are made before the uid drop: afterwards the run's folder (inside the grader's
    # private temporary folder) can no longer be opened to be ruled
    ruleset = (prepare_landlock(libc, hidden, visible, writable)
               if "landlock" not in skip else None)
    uid = int(options.get("uid") or UNPRIVILEGED_ID)
    # in its own root, the interpreter's folders are reachable where the real root hides them
    # (a 0700 home): decided there, once the run is inside it
    reachable = all(world_readable(p) for p in needed) if own_root else None
    if "unprivileged-uid" not in skip and drop_to_nobody(workdir, needed, uid, reachable):
        active.append("unprivileged-uid")
    elif drop_capabilities(libc) and (os.geteuid() == 0 or active):
        active.append("no-capabilities")
    # no /proc/<pid>/mem of ours for anyone else (not before: it makes our /proc entries
    # root's, and a user namespace's id maps could then not be written)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if restrict_landlock(libc, ruleset):
        active.append("landlock")
    deny_ipc = "ipc-namespace" not in active
    if "seccomp" not in skip and seccomp_filter(protected, deny_ipc):
        active.append("seccomp")
        if deny_ipc:
            active.append("no-ipc")
    return active


def only_the_uid_separates(active):
    """Is the run's own uid its only file system layer (no own root, no Landlock)? Then it can
    read whatever every user may read."""
    return "unprivileged-uid" in active and not {"read-only-root", "landlock"} & set(active)


def has_filesystem_isolation(active):
    return any(layer in active for layer in FS_LAYERS)
