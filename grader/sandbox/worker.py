"""The child process: runs the student's code and sends back raw arrays. It never scores anything.

Started by ``grader.sandbox`` as ``python -I -B worker.py REQUEST_FD RESULT_FD``. It imports
nothing of the grader package (``wire.py`` is loaded from its file, before any student code runs),
limits itself, installs the tripwires, executes the submission, then calls the function on each
probe the parent sends and answers with one frame per call.
"""

import builtins
import importlib.util
import io
import os
import resource
import signal
import sys
import time
import traceback
import types

_here = os.path.dirname(os.path.abspath(__file__))


def _load(name, filename):
    """A sibling file as a module, without importing the grader package."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_here, filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


wire = _load("_ag_wire", "wire.py")
confinement = _load("_ag_confine", "confine.py")  # standard library only
returns = _load("_ag_returns", "returns.py")  # imports NumPy: before any student code
interface = _load("_ag_interface", "interface.py")  # a course's conventions, NumPy only
tracing = _load("_ag_trace", "trace.py")  # the intermediate values of one call, NumPy only
peak = _load("_ag_peak", "peak.py")  # the tiling check's measurement, standard library only
WrongReturn = returns.WrongReturn
to_arrays = returns.to_arrays
check_binding = returns.check_binding
_plain_array = returns.plain_array

import numpy as np  # noqa: E402  (after the wire module, before any student code)

#: what must stay readable for a run to drop to an unprivileged uid: the interpreter, NumPy
NEEDED = (sys.executable, os.path.dirname(os.__file__), os.path.dirname(np.__file__))
KEPT_OUTPUT_BYTES = 64 * 1024
#: a traced rerun shares the call's deadline: code this slow on a small test input is not traced
TRACE_ONLY_BELOW_SECONDS = 0.25
STUDENT_FILE_MARK = "submission"
#: a notebook cell may wait this many times its CPU budget on the wall clock (as a run may)
CELL_WALL_FACTOR = peak.WALL_FACTOR
_student_files = {"<submission>"}
_run_limits: dict = {}  # this run's limits, to name the one an error comes from
_write = os.write
_read = os.read
_asarray = np.asarray
_array = np.array
_ndarray = np.ndarray
_frombuffer = np.frombuffer
_perf = time.perf_counter
_monotonic = time.monotonic
_encode = wire.encode


class CellTimeout(BaseException):
    """Raised in a notebook cell that runs past its time budget."""


class _CappedStream(io.TextIOBase):
    """sys.stdout/sys.stderr for the student: keeps the first bytes, drops the rest, never fails."""

    def __init__(self, fd):
        self.fd = fd
        self.kept = 0

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            text = str(text)
        if self.kept < KEPT_OUTPUT_BYTES:
            data = text.encode("utf-8", "replace")[: KEPT_OUTPUT_BYTES - self.kept]
            self.kept += len(data)
            try:
                _write(self.fd, data)
            except OSError:
                self.kept = KEPT_OUTPUT_BYTES
        return len(text)

    def flush(self):
        pass


class Channel:
    def __init__(self, fd, nonce):
        self.fd = fd
        self.nonce = nonce

    def send(self, header, blob=b""):
        header["nonce"] = self.nonce
        data = _encode(header, blob)
        view = memoryview(data)
        while view:
            written = _write(self.fd, view)
            view = view[written:]


def apply_limits(limits):
    for name, value in (
        ("RLIMIT_CORE", 0),  # (always: no core dumps)
        ("RLIMIT_AS", limits.get("memory_bytes")),
        ("RLIMIT_FSIZE", limits.get("fsize_bytes")),
        ("RLIMIT_NOFILE", limits.get("nofile")),
    ):
        if value or name == "RLIMIT_CORE":
            try:
                resource.setrlimit(getattr(resource, name), (value, value))
            except (ValueError, OSError):
                pass
    cpu = limits.get("cpu_seconds")
    if cpu:
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
        except (ValueError, OSError):
            pass
    try:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    except (OSError, ValueError):
        pass
    try:  # die with the grader (Linux): an orphaned child must not live on
        # (the C library the fork server loaded: a fork finds prctl looked up already, and
        # copies none of ctypes' pages to make another handle)
        confinement._libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _die_with_parent(parent, layers=()):
    try:
        confinement._libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    # (it died before the signal was asked for again: this process was adopted; in a pid
    # namespace, the parent is the namespace's init (1), or outside it and reads as 0)
    if os.getppid() not in ((parent, 0, 1) if "pid-namespace" in layers else (parent, 0)):
        os._exit(70)


def install_tripwires(forbidden_roots, allowed_files, forbidden_modules, tripped):
    """Audit hook: record and refuse imports of the grader and reads of its files.

    A tripwire, not a wall (CPython's audit hooks can be bypassed with ctypes); the wall is that
    nothing in this process can compute a score.
    """
    roots = tuple(os.path.realpath(r) + os.sep for r in forbidden_roots)
    allowed = frozenset(os.path.realpath(f) for f in allowed_files)
    busy = [False]

    def hook(event, args):
        if busy[0]:
            return
        if event == "import":
            name = str(args[0])
            if name.split(".")[0] in forbidden_modules:
                tripped.append(f"import of {name!r}")
                raise ImportError(f"{name} is not available while grading")
        elif event == "open" and roots:
            path = args[0]
            if isinstance(path, int) or path is None:
                return
            busy[0] = True
            try:
                real = os.path.realpath(os.fsdecode(path))
            except (TypeError, ValueError, OSError):
                return
            finally:
                busy[0] = False
            if real.startswith(roots) and real not in allowed:
                tripped.append(f"read of {real}")
                raise PermissionError(f"{path!r} is not readable while grading")

    sys.addaudithook(hook)


class SkippedCheck:
    """What the notebook's ``check()`` returns while grading: nothing was checked, and a cell
    that reads the feedback (``fb.passed``, ``fb.score``, ``fb.misconceptions``) still runs."""

    passed = False
    score = max_score = 0.0
    misconceptions = checks = ()
    report: dict = {}

    def __getattr__(self, name):
        return None

    def __bool__(self):
        return False

    def __repr__(self):
        return "(attention-grader: the notebook self-check is skipped while grading)"


def grader_stub():
    """``grader`` inside the sandbox: ``from grader import check`` in a notebook does nothing."""
    module = types.ModuleType("grader")

    def check(*args, **kwargs):
        print("(attention-grader: the notebook self-check is skipped while grading)")
        return SkippedCheck()

    module.check = check
    return module


#: the student's frames of a traceback, listed, by where it passed: a call that raises (a stub's
#: NotImplementedError) raises from the same place for every probe, and listing its frames
#: looks up the source of every frame
_listed: dict = {}


def student_traceback(exc):
    places = []
    tb = exc.__traceback__
    while tb is not None:
        places.append((tb.tb_frame.f_code, tb.tb_lineno, tb.tb_lasti))
        tb = tb.tb_next
    key = tuple(places)
    listed = _listed.get(key)
    if listed is None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if is_student_file(f.filename)]
        listed = "".join(traceback.format_list(frames[-4:]))
        if len(_listed) < 64:
            _listed[key] = listed
    text = listed + "".join(traceback.format_exception_only(type(exc), exc))
    return text[-2000:]


#: what to install for a module a submission imports but this environment lacks
INSTALL_HINTS = {"torch": "pip install torch", "tensorflow": "pip install tensorflow",
                 "jax": 'pip install "jax[cpu]"', "scipy": "pip install scipy",
                 "sklearn": "pip install scikit-learn", "einops": "pip install einops"}


def error_kind(exc):
    if isinstance(exc, MemoryError):
        return "memory-limit"
    if isinstance(exc, CellTimeout):
        return "timeout"
    if (isinstance(exc, ModuleNotFoundError) and exc.name
            and exc.name.split(".")[0] not in ("grader", "reference")
            and not _installed(exc.name.split(".")[0])):
        return "missing-dependency"
    return "runtime-error"


def _installed(top):
    """Is the package there? (An import that failed half-way, for want of memory or time, or
    inside the package, is not a missing package.)"""
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


#: what an OSError's errno says about a limit of the run
LIMIT_ERRORS = {
    28: "the run's disk space ({disk_mb} MB for its folder and /tmp together) is used up",
    27: "a file reached the size limit of {fsize_mb} MB",
    122: "the run's disk quota is used up",
}


def limit_note(exc, limits):
    """A sentence naming the limit an error comes from ('' when it comes from none)."""
    template = LIMIT_ERRORS.get(getattr(exc, "errno", None)) if isinstance(exc, OSError) else None
    if template is None:
        return ""
    return template.format(disk_mb=limits.get("disk_mb", "?"),
                           fsize_mb=(limits.get("fsize_bytes") or 0) >> 20) + ": "


def dependency_message(exc):
    top = exc.name.split(".")[0]
    install = INSTALL_HINTS.get(top, f"pip install {top}")
    # the student's words (how staff add a package to a class's grader is in the README)
    return (f"`import {exc.name}` failed: `{top}` is not installed where the code is graded. "
            f"To check it yourself, install it (`{install}`), or write that part without it.")


def memory_message(limits, exc):
    megabytes = (limits.get("memory_bytes") or 0) >> 20
    last = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
    return (f"the memory limit of {megabytes} MB was reached while loading ({last[:300]}). "
            f"If a library needs more (a large PyTorch build, say), raise the limit with "
            f"--memory-mb; if your code builds large arrays at the top level, build them "
            f"inside a function or leave them out of the graded file.")


def execute_sources(setup, namespace):
    """Run the .py file or the notebook's cells; return (fatal error, cell errors)."""
    errors = []
    is_notebook = setup["kind"] == "ipynb"
    cell_seconds = setup["limits"].get("cell_seconds", 0)
    for index, source in enumerate(setup["sources"]):
        where = f"code cell {index + 1}" if is_notebook else "the file"
        filename = f"<{STUDENT_FILE_MARK} cell {index + 1}>" if is_notebook else setup["filename"]
        try:
            code = compile(source, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as exc:
            message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            if isinstance(exc, (MemoryError, RecursionError)):
                message = (f"Python could not compile this code: it is too large or too deeply "
                           f"nested ({type(exc).__name__})")
            if not is_notebook:
                return {"kind": "syntax-error", "message": message[-2000:]}, errors
            errors.append({"kind": "syntax-error", "where": where, "message": message[-1000:]})
            continue
        if is_notebook and cell_seconds:
            # CPU time decides (a loaded machine must not stop a cell); the wall clock, four
            # times as long, stops a cell that sleeps or waits
            signal.setitimer(signal.ITIMER_PROF, cell_seconds)
            signal.setitimer(signal.ITIMER_REAL, cell_seconds * CELL_WALL_FACTOR)
        try:
            exec(code, namespace)
        except CellTimeout:
            errors.append({"kind": "timeout", "where": where,
                           "message": f"{where} used more than {cell_seconds:g} s of CPU time "
                                      f"(or waited {cell_seconds * CELL_WALL_FACTOR:g} s) and "
                                      "was stopped"})
        except BaseException as exc:  # noqa: BLE001 - a student cell may raise anything
            kind = error_kind(exc)
            message = (dependency_message(exc) if kind == "missing-dependency"
                       else limit_note(exc, setup["limits"]) + student_traceback(exc))
            if kind == "memory-limit":
                message = memory_message(setup["limits"], exc)
            errors.append({"kind": kind, "where": where, "message": message})
        finally:
            if is_notebook and cell_seconds:
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.setitimer(signal.ITIMER_REAL, 0)
    return None, errors


def defined_functions(namespace):
    """The names of the functions, and of the classes, the submission defined (what the grader
    may call: a course's interface may ask for a class)."""
    own = namespace.get("__name__")
    return sorted(
        name for name, value in list(namespace.items())
        if not name.startswith("__") and callable(value)
        and (not isinstance(value, type) or getattr(value, "__module__", None) == own)
    )[:200]


def build_args(call, arrays, blob):
    made = {}
    args = []
    for spec in call["args"]:
        if "array" in spec:
            index = spec["array"]
            if index not in made:
                meta = arrays[index]
                raw = blob[meta["offset"] : meta["offset"] + meta["nbytes"]]
                made[index] = _frombuffer(raw, dtype=meta["dtype"]).reshape(meta["shape"]).copy()
            args.append(made[index])
        else:
            args.append(spec["value"])
    return args, made


def pack(parts):
    """[(role, ndarray)] -> (array headers, blob)."""
    headers, chunks, offset = [], [], 0
    for role, array in parts:
        data = array.tobytes()
        headers.append({"role": role, "dtype": array.dtype.str, "shape": list(array.shape),
                        "offset": offset, "nbytes": len(data)})
        chunks.append(data)
        offset += len(data)
    return headers, b"".join(chunks)


def run_call(function, call, arrays, blob, spec=None, task=None):
    args, made = build_args(call, arrays, blob)
    if interface.is_canonical(spec, task):
        problem = check_binding(function, args)
        if problem:
            return {"status": "wrong-signature", "message": problem}, []
    invoke = interface.invoker(function, spec, task, to_arrays, check_binding)
    if call.get("peak"):
        return measured_call(invoke, args, function), []
    started = _perf()
    parts = []
    try:
        returned = invoke(args)
        parts.extend((f"{wire.OUTPUT_ROLE}{name}", array) for name, array in returned.items())
        if call.get("repeat"):
            again = invoke(args)
            parts.append(("repeat", next(iter(again.values()))))
    except interface.InterfaceError as exc:
        return {"status": "wrong-signature", "message": str(exc)}, []
    except WrongReturn as exc:
        return {"status": "wrong-shape", "message": str(exc)}, []
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything, even SystemExit
        message = limit_note(exc, _run_limits) + student_traceback(exc)
        if isinstance(exc, SystemExit):
            message = f"the function called sys.exit({exc.code!r})"
        return {"status": error_kind(exc), "message": message}, []
    seconds = _perf() - started
    for position, (index, array) in enumerate(sorted(made.items())):
        meta = arrays[index]
        if (array.shape == tuple(meta["shape"]) and array.dtype.str == meta["dtype"]
                and array.tobytes() == blob[meta["offset"]: meta["offset"] + meta["nbytes"]]):
            continue  # left as it came: the grader has it already
        parts.append((f"input:{position}", _plain_array(array)))
    answer = {"status": "ok", "seconds": seconds}
    if call.get("trace") and seconds < TRACE_ONLY_BELOW_SECONDS:
        answer["trace"] = trace_call(invoke, call, arrays, blob, parts)
    return answer, parts


def measured_call(invoke, args, function):
    """The tiling check's call: its peak allocation measured, its outputs not sent back (code
    that uses torch or another framework tracemalloc cannot see runs in a fork, ``peak.py``)."""
    try:
        _, measurement = peak.measure(lambda: invoke(args),
                                      peak.frameworks_of(function, loaded_here=True))
    except peak.CallFailed as exc:
        return {"status": exc.kind, "message": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything
        return {"status": error_kind(exc), "message": limit_note(exc, _run_limits)
                + student_traceback(exc)}
    return {"status": "ok", "seconds": measurement["seconds"], "peak": measurement}


def is_student_file(filename):
    return filename in _student_files or filename.startswith(f"<{STUDENT_FILE_MARK}")


def trace_call(invoke, call, arrays, blob, parts):
    """Call again on fresh copies of the inputs, recording the intermediate arrays (see
    ``trace.py``); their places go in the answer, the arrays into ``parts``."""
    args, _ = build_args(call, arrays, blob)
    places, returned = [], []
    for filename, line, depth, name, array, chain in tracing.traced(invoke, args,
                                                                    is_student_file, returned):
        places.append({"file": filename, "line": line, "depth": depth, "name": name,
                       "chain": chain})
        parts.append((f"trace:{len(places) - 1}", array))
    if returned:  # the traced run's own answer: the grader quotes only a run that agrees
        parts.append(("trace-output", next(iter(returned[0].values()))))
    return places


def main():
    if sys.argv[1] == "--zygote":
        for framework in sys.argv[3:]:  # a course's framework, imported once for every fork
            try:
                importlib.import_module(framework)
            except Exception:  # noqa: BLE001 - a fork imports it itself, and says what failed
                pass
        _load("_ag_zygote", "zygote.py").serve_forks(
            int(sys.argv[2]), serve, apply_limits,
            prepare=lambda request: confinement.prepare(request.get("forbidden_roots", ()), NEEDED),
            warm=confinement.warm,  # (each fork then only loads its seccomp filter)
            namespaces=confinement.RunNamespaces())
        return
    serve(int(sys.argv[1]), int(sys.argv[2]))


def refusal(options, layers):
    """Why the submission must not run with these layers (None: it may)."""
    if not options.get("require_fs_isolation"):
        return None
    if (not confinement.has_filesystem_isolation(layers)
            and any(os.access(p, os.W_OK) for p in options.get("forbidden_roots") or ())):
        return "no-filesystem-layer"
    if (confinement.only_the_uid_separates(layers)
            and any(os.access(p, os.R_OK) for p in options.get("private_paths") or ())):
        return "classmates-readable"  # (checked as the run's own uid)
    return None


def serve(request_fd, result_fd, entered=None):
    """Run one submission (``entered``: the namespaces the fork server made for it)."""
    setup, _ = wire.read_frame(request_fd)
    channel = Channel(result_fd, setup["nonce"])
    _student_files.add(setup["filename"])
    apply_limits(setup["limits"])
    _run_limits.update(setup["limits"])

    def on_alarm(signum, frame):
        raise CellTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGPROF, on_alarm)
    options = setup["confine"]
    parent = os.getppid()
    layers = confinement.confine(options, needed=NEEDED, entered=entered)
    # a change of user clears the death signal (prctl(2)): asked for again, so that a run that
    # dropped to an unprivileged uid still dies with its server (a batch killed with kill -9
    # left such runs sleeping, adopted by init, where there is no pid namespace)
    _die_with_parent(parent, layers)
    refused = refusal(options, layers)
    # sent before any student code runs, so the submission cannot forge it
    channel.send({"type": "hardened", "layers": layers, "refused": refused})
    if refused:
        return
    tripped = []
    sys.modules["grader"] = grader_stub()
    # (the child's own files: a traceback through them reads their lines)
    own_files = [os.path.abspath(__file__), wire.__file__, returns.__file__, interface.__file__,
                 confinement.__file__, tracing.__file__, peak.__file__,
                 os.path.join(_here, "zygote.py"), os.path.join(_here, "rope_tables.py")]
    install_tripwires(setup["forbidden_roots"], own_files,
                      frozenset({"grader", "reference"}), tripped)
    sys.stdout = _CappedStream(1)
    sys.stderr = _CappedStream(2)
    sys.stdin = io.StringIO("")
    module = types.ModuleType(STUDENT_FILE_MARK)
    module.__dict__.update({"__builtins__": builtins, "__file__": setup["filename"],
                            "__name__": "__main__" if setup["kind"] == "ipynb" else "submission"})
    sys.modules[STUDENT_FILE_MARK] = module
    fatal, cell_errors = execute_sources(setup, module.__dict__)
    functions = defined_functions(module.__dict__)
    channel.send({"type": "loaded", "fatal": fatal, "errors": cell_errors,
                  "functions": functions, "tripped": list(tripped)})
    while True:  # the graded calls, then (when the grader asks) the traced reruns
        try:
            request, blob = wire.read_frame(request_fd)
        except EOFError:
            return
        targets = request.get("targets") or [request]
        for call in request["calls"]:
            target = targets[call.get("target", 0)]  # (a multi-part run calls several)
            function = module.__dict__.get(target["function"])
            answer, parts = run_call(function, call, request["arrays"], blob,
                                     target.get("interface"), target.get("task"))
            headers, payload = pack(parts)
            answer.update({"type": "result", "index": call["index"], "arrays": headers,
                           "tripped": list(tripped)})
            channel.send(answer, payload)
        channel.send({"type": "done", "tripped": list(tripped)})


if __name__ == "__main__":
    main()
