"""The one-line self-check inside a student's notebook: ``from grader import check``.

Here, and only here, the student's function runs in the calling process: the student runs their
own code in their own kernel, exactly as when they call it themselves. The probes, the diagnosis
and the scoring are the ones ``attention-grader check`` uses, so the score and the misconceptions
are the same; only the isolation (and with it the protection against code that hangs, crashes the
kernel or tampers with the grader) is missing. Each call still has a time limit where the platform
allows it (SIGALRM in the main thread). ``grade_file`` grades a trusted file the same way (the
grader's own test fixtures, tests/README.md), with the report the sandbox gives it.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import linecache
import signal
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import registry
from grader.config import DEFAULT_LIMITS
from grader.model import DEFAULT_SEED, CallOutcome, GraderError, Probe, TracedValue, printable_name

#: what a text self-check says under its first part (the details are left out)
MORE = ("Details (evidence, errors in full, every check): check(..., details=True), or "
        "feedback.with_details().")

if TYPE_CHECKING:
    from grader.core.assignments import Assignment
    from grader.core.tiling import Measurement


class _CallTimeout(BaseException):
    pass


class Feedback:
    """What ``check()`` returns: the score, the misconceptions, every check, and the whole
    report (``.report``, a dict). Shows itself as HTML in Jupyter and as text elsewhere
    (``str(feedback)``); ``repr`` is one line. Shown, it is what to fix first; the details
    (evidence, errors in full, every check) are folded in the HTML and left out of the text
    unless ``details`` (``feedback.with_details()`` shows them)."""

    def __init__(self, report: dict[str, Any], *, details: bool = False) -> None:
        self.report = report
        self.details = details
        self._just_shown = False

    def with_details(self) -> Feedback:
        """The same feedback, shown with its details open."""
        return Feedback(self.report, details=True)

    @property
    def checks(self) -> list[dict[str, Any]]:
        return list(self.report["checks"])

    @property
    def passed(self) -> bool:
        """Full marks and no misconception."""
        return self.score >= self.max_score and not self.misconceptions

    @property
    def score(self) -> float:
        return float(self.report["score"])

    @property
    def max_score(self) -> float:
        return float(self.report["max_score"])

    @property
    def misconceptions(self) -> list[str]:
        return [m["id"] for m in self.report["misconceptions"]]

    def __str__(self) -> str:
        from grader.render import text

        if self.details or self.report.get("parts"):
            return text.render(self.report)
        first = "\n".join(text.summary(self.report)).rstrip()
        return f"{first}\n\n{MORE}\n"

    def __repr__(self) -> str:
        found = ", ".join(self.misconceptions) or "none"
        return (f"<Feedback {self.report['assignment']}: {self.score:g} / {self.max_score:g}, "
                f"misconceptions: {found}>")

    def _repr_html_(self) -> str:
        from grader.render import html

        return html.render(self.report, details_open=self.details)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """HTML for Jupyter, with the text report beside it (never a bare object repr)."""
        return {"text/html": self._repr_html_(), "text/plain": str(self)}

    def _ipython_display_(self) -> None:
        """Jupyter shows the value of a cell's last line: ``check(fn)`` has shown itself
        already, so that once is skipped; shown again whenever asked for later."""
        if self._just_shown:
            self._just_shown = False
            return
        _show(self)


def _copy_args(probe: Probe) -> tuple[list[Any], dict[int, Any]]:
    """Fresh copies of the probe's arrays; an array passed twice stays one object, as in the
    sandbox (self-attention passes X as both X_q and X_kv)."""
    import numpy as np

    made: dict[int, Any] = {}
    args = []
    for value in probe.args:
        if isinstance(value, np.ndarray):
            if id(value) not in made:
                made[id(value)] = value.copy()
            args.append(made[id(value)])
        else:
            args.append(value)
    return args, made


def _student_traceback(exc: BaseException, student_file: str | None = None) -> str:
    """The last frames of the traceback and the exception: every frame but this module's, or
    (``student_file`` given) only that file's, as the sandbox lists them."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename == student_file or (student_file is None and f.filename != __file__)]
    text = "".join(traceback.format_list(frames[-4:]))
    return (text + "".join(traceback.format_exception_only(type(exc), exc)))[-2000:]


def _with_deadline(seconds: float, call: Callable[[], Any], cpu: bool = False) -> Any:
    """``call()``, stopped after ``seconds`` on the wall clock; with ``cpu``, after ``seconds``
    of this process's CPU time, the wall clock only a backstop ``WALL_FACTOR`` times as long
    (so that a loaded machine does not decide the tiling check's verdict)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal,
                                                                                 "setitimer"):
        return call()
    from grader.sandbox.peak import WALL_FACTOR

    def on_alarm(signum: int, frame: Any) -> None:
        raise _CallTimeout

    timers = [(signal.SIGALRM, signal.ITIMER_REAL, seconds * (WALL_FACTOR if cpu else 1.0))]
    if cpu:
        timers.append((signal.SIGPROF, signal.ITIMER_PROF, seconds))
    previous = [signal.signal(signum, on_alarm) for signum, _, _ in timers]
    for _, timer, after in timers:
        signal.setitimer(timer, after)
    try:
        return call()
    finally:
        for (signum, timer, _), handler in zip(timers, previous):
            signal.setitimer(timer, 0)
            signal.signal(signum, handler)


def call_probes(function: Callable[..., Any], probes: Sequence[Probe], calling: dict[str, Any],
                call_seconds: float = DEFAULT_LIMITS.call_seconds,
                student_file: str | None = None) -> list[CallOutcome]:
    """Call ``function`` on every probe, in this process, with the sandbox's conventions
    (``calling``: the assignment's, ``Assignment.calling``: its task's canonical call and the
    course's interface).

    Warnings and NumPy floating-point errors behave as in the sandbox's fresh interpreter (shown,
    never raised), whatever filters the kernel or a test runner has set: an overflow warning must
    not turn a result into an error here when it does not in the command-line grader.
    """
    import numpy as np

    with warnings.catch_warnings(), np.errstate(divide="warn", over="warn", invalid="warn", under="ignore"):
        warnings.simplefilter("default")
        return _call_each(function, probes, call_seconds, calling, student_file)


def _call_each(function: Callable[..., Any], probes: Sequence[Probe], call_seconds: float,
               calling: dict[str, Any], student_file: str | None) -> list[CallOutcome]:
    from grader.sandbox import interface
    from grader.sandbox.returns import WrongReturn, check_binding, to_arrays

    spec, task = calling.get("interface"), calling.get("task")
    invoke = interface.invoker(function, spec, task, to_arrays, check_binding)
    outcomes = []
    for probe in probes:
        args, made = _copy_args(probe)
        problem = check_binding(function, args) if interface.is_canonical(spec, task) else None
        if problem:
            outcomes.append(CallOutcome(probe.id, "wrong-signature", problem))
            continue
        started = time.perf_counter()
        try:
            call = functools.partial(invoke, args)
            outputs = _with_deadline(call_seconds, call)
            repeat = next(iter(_with_deadline(call_seconds, call).values())) \
                if probe.repeat else None
        except interface.InterfaceError as exc:
            outcomes.append(CallOutcome(probe.id, "wrong-signature", str(exc)))
            continue
        except WrongReturn as exc:
            outcomes.append(CallOutcome(probe.id, "wrong-shape", str(exc)))
            continue
        except _CallTimeout:
            outcomes.append(CallOutcome(probe.id, "timeout",
                                        f"the call took longer than {call_seconds:g} s"))
            continue
        except KeyboardInterrupt:
            raise
        except MemoryError:
            outcomes.append(CallOutcome(probe.id, "memory-limit", "MemoryError"))
            continue
        except BaseException as exc:  # noqa: BLE001 - the student's function may raise anything
            outcomes.append(CallOutcome(probe.id, "runtime-error",
                                        _student_traceback(exc, student_file)))
            continue
        seconds = time.perf_counter() - started
        traced = _traced(function, invoke, probe) if probe.traced else ()
        outcomes.append(CallOutcome(
            probe.id, outputs=outputs, repeat_output=repeat,
            inputs_after=tuple(made.values()), seconds=seconds, traced=traced))
    return outcomes


def measure_tiling(function: Callable[..., Any], spec: Assignment, seed: int,
                   seconds: float | None = None) -> Measurement:
    """The tiling check's measurement of ``function`` (``grader.core.tiling``), in this process:
    its one call on the measured probe, after the output probes, with its own time limit; or
    why there is none (a sentence); None when the assignment has no tiling check. Code that
    uses torch or another framework tracemalloc cannot see (``peak.frameworks_of``, as in the
    sandbox) is called in a fork of this process, as in the sandbox."""
    from grader.core import tiling
    from grader.sandbox import interface, peak
    from grader.sandbox.returns import check_binding, to_arrays

    probes = tiling.probes_of(spec, seed)
    if not probes:
        return None
    args, _ = _copy_args(probes[0])
    calling = spec.calling()
    invoke = interface.invoker(function, calling.get("interface"), calling.get("task"),
                               to_arrays, check_binding)
    frameworks = peak.frameworks_of(function)
    limit = tiling.SECONDS if seconds is None else seconds
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # (CPU time decides, as in the sandbox; a fork keeps its own CPU limit, so only the
            # wall backstop is set here for it, a little later than the fork's)
            _, measured = _with_deadline(
                limit * peak.WALL_FACTOR + 1.0 if frameworks else limit,
                lambda: peak.measure(lambda: invoke(args), frameworks, limit),
                cpu=not frameworks)
    except _CallTimeout:
        return f"the call did not return within {limit:g} s"
    except peak.CallFailed as failed:
        return str(failed)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the student's function may raise anything
        return f"the call raised {type(exc).__name__}"
    return measured


def source_file(target: Any) -> str | None:
    """The file (a notebook cell's, in a kernel) where the function, or the class's
    ``forward``, is defined."""
    code = getattr(getattr(target, "forward", target), "__code__", None)
    return getattr(code, "co_filename", None)


def _traced(function: Any, invoke: Callable[[list[Any]], Any], probe: Probe
            ) -> tuple[TracedValue, ...]:
    """The traced rerun of one probe (as the sandbox's child does, ``sandbox/trace.py``),
    keeping the lines of the file that defines the function: where a report's lines point."""
    from grader.sandbox import trace as tracing

    home = source_file(function)
    if home is None:
        return ()
    args, _ = _copy_args(probe)
    return tuple(
        TracedValue(None, line, depth, array, name == tracing.CHANGED_INPUT, chain)
        for _, line, depth, name, array, chain in tracing.traced(invoke, args,
                                                                 lambda f: f == home))


def _assignment_for(target: Any, assignment: str | None) -> str:
    known = registry.ids()
    if assignment is not None:
        if not registry.exists(assignment):
            raise ValueError(registry.unknown_assignment(assignment))
        return assignment
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    if name in known:
        return name
    for assignment_id, function_name in registry.functions().items():
        if function_name == name:
            return assignment_id
    raise ValueError(f"cannot tell which assignment `{name}` is for; pass "
                     f"assignment= one of {', '.join(known)}")


def reproduce(target: Any, *args: Any, assignment: str) -> Any:
    """Call ``target`` (a function or a course's class) on a test input given in the grader's
    own form (SPEC's arguments, NumPy arrays, True = may attend) the way ``assignment``'s
    interface hands it to the course's code (its parameter order, mask convention, weight
    layout, array type), and return its outputs in the grader's form, as SPEC's function
    would: the output alone, or a tuple of the task's outputs (``(output, weights)``) when it
    returned more than one. What a report's "Reproduce it with" calls for a course's own
    assignment."""
    from grader.core.assignments import get
    from grader.sandbox import interface
    from grader.sandbox.returns import check_binding, to_arrays

    calling = get(assignment).calling()
    invoke = interface.invoker(target, calling.get("interface"), calling.get("task"),
                               to_arrays, check_binding)
    outputs = tuple(invoke(list(args)).values())
    return outputs[0] if len(outputs) == 1 else outputs


def grade_function(function: Callable[..., Any], assignment: str, *,
                   seed: int = DEFAULT_SEED, measure: bool = True) -> dict[str, Any]:
    """Grade a function object in this process and return the report (same as the CLI's).
    ``measure=False`` leaves out the tiling check's one large call (tiled attention): the check
    then says it was not measured and is scored as passed."""
    from grader.core.assignments import get
    from grader.core.report import validate
    from grader.pipeline import base_metadata, evaluate

    spec = get(assignment)
    started = time.monotonic()
    name = f"{getattr(function, '__name__', 'function')} (in this notebook)"
    metadata = {**base_metadata(seed, name, spec.function),
                "isolation": ["none: notebook self-check"]}
    probes = spec.probes(seed)
    outcomes = call_probes(function, probes, spec.calling())
    home = source_file(function)
    source = "".join(linecache.getlines(home)) if home else ""
    report = evaluate(spec, probes, outcomes, [], metadata, sources=(source,) if source else (),
                      measurement=measure_tiling(function, spec, seed) if measure else None)
    report["metadata"]["duration_seconds"] = round(time.monotonic() - started, 3)
    validate(report)
    return report


def grade_file(path: str | Path, assignment: str, *,
               seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Grade a ``.py`` file in this process and return the report ``grader.grade`` gives it, but
    for what describes the run (``duration_seconds``, ``isolation``, ``stdout``).

    For trusted code only, the grader's own test fixtures: the file runs here with none of the
    sandbox's isolation or limits (a call still has its time limit). Like the sandbox, it runs
    as module ``submission`` compiled under its bare file name, and a traceback lists that
    file's own frames only. A file that cannot be loaded raises.
    """
    from grader.core.assignments import get
    from grader.load import load
    from grader.pipeline import base_metadata, check_fixes, evaluate

    started = time.monotonic()
    submission = load(Path(path))
    if submission.kind != "py":
        raise ValueError(f"{path}: grade_file grades .py files only")
    spec = get(assignment)
    name = printable_name(submission.path.name)
    probes = spec.probes(seed)

    measured: list[Measurement] = []

    def run(sources: tuple[str, ...], measure: bool = True) -> list[CallOutcome]:
        source, = sources
        namespace: dict[str, Any] = {"__builtins__": builtins, "__file__": name,
                                     "__name__": "submission"}
        with warnings.catch_warnings(record=True):  # what the sandbox's child prints, not shown
            warnings.simplefilter("default")
            exec(compile(source, name, "exec", dont_inherit=True), namespace)
            outcomes = call_probes(namespace[spec.function], probes, spec.calling(),
                                   student_file=name)
            if measure:
                measured[:] = [measure_tiling(namespace[spec.function], spec, seed)]
            return outcomes

    def regrade(sources: tuple[str, ...]) -> dict[str, Any]:
        """The code with a literal fix applied, graded again as the sandbox's grade does: the
        handed-in code's tiling measurement stands for the fixed code's."""
        try:
            outcomes = run(sources, measure=False)
        except Exception:  # noqa: BLE001 - a fix that breaks loading is a fix that failed
            return {"status": "error", "score": 0.0, "misconceptions": []}
        return evaluate(spec, probes, outcomes, [], base_metadata(seed, ""), sources=(),
                        measurement=measured[0])

    metadata = {**base_metadata(seed, name, spec.function), "isolation": ["none: in-process"]}
    outcomes = run(submission.sources)
    report = evaluate(spec, probes, outcomes, [], metadata, sources=submission.sources,
                      measurement=measured[0])
    report = check_fixes(report, submission.sources, regrade)
    report["metadata"]["duration_seconds"] = round(time.monotonic() - started, 3)
    return report


def check(target: Callable[..., Any] | str | None = None, assignment: str | None = None, *,
          seed: int = DEFAULT_SEED, display: bool = True, details: bool = False) -> Feedback:
    """Check your function against the grader's probes and show what it finds.

    ``check(scaled_dot_product_attention)`` grades that function; ``check("attention")`` finds
    the assignment's function among your notebook's variables, and ``check()`` grades the most
    advanced assignment function your notebook defines. The score and misconceptions are those
    ``attention-grader check`` gives for the same code. Your function runs here, in your own
    kernel (the command-line grader runs it in an isolated process instead).

    The feedback is shown (HTML in Jupyter, text elsewhere; not with ``display=False``): what
    to fix first, with the details (evidence, errors in full, every check) folded away in
    Jupyter and left out of the text unless ``details=True``. It is
    returned as a ``Feedback``: ``r = check(fn); r.score, r.max_score, r.misconceptions,
    r.checks, r.passed, r.report``. A course's own assignment: ``assignment=`` its preset ID or
    folder.
    """
    if target is None or isinstance(target, str):
        caller = inspect.currentframe()
        outer = caller.f_back if caller else None
        namespace = {**outer.f_globals, **outer.f_locals} if outer else {}
        del caller, outer
        whole = _multi_part(target, assignment)
        if whole is not None:  # every part the notebook defines, one report
            return _shown(Feedback(grade_parts(namespace, whole, seed=seed), details=details),
                          display)
        function, assignment_id = _find_in(namespace, target, assignment)
    else:
        function, assignment_id = target, _assignment_for(target, assignment)
    return _shown(Feedback(grade_function(function, assignment_id, seed=seed), details=details),
                  display)


def _shown(feedback: Feedback, display: bool) -> Feedback:
    if display:
        _show(feedback)
        feedback._just_shown = True
    return feedback


def _multi_part(target: str | None, assignment: str | None) -> str | None:
    """The multi-part assignment asked for (``check("cs231n-transformer-layers")`` or
    ``check(assignment=...)``), if one is."""
    for reference in (assignment, target):
        if reference and registry.exists(reference) and registry.get(reference).multi_part:
            return reference
    return None


def grade_parts(namespace: dict[str, Any], assignment: str, *,
                seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Grade every part of a multi-part assignment from the functions (or classes) this
    namespace defines, in this process; a part it does not define scores 0 with its own
    ``missing-function`` error."""
    from grader.core.report import PartReport, join_parts, validate
    from grader.pipeline import base_metadata, error_report

    info = registry.get(assignment)
    metadata = {**base_metadata(seed, "(in this notebook)"),
                "isolation": ["none: notebook self-check"]}
    graded = []
    for found, part in registry.parts_of(info):
        reference = registry.reference_of(found)
        target = namespace.get(found.function)
        if callable(target):
            report = grade_function(target, reference, seed=seed)
        else:
            report = error_report(reference, [GraderError(
                "missing-function", f"this part is not written yet: `{found.function}` is not "
                "defined in this notebook (run the cell that defines it first)")], metadata)
        graded.append(PartReport(found.id, found.function, registry.part_max_score(found, part),
                                 report))
    metadata["function"] = ", ".join(found.function for found, _ in registry.parts_of(info))
    report = join_parts(info.id, graded, metadata)
    validate(report)
    return report


def _find_in(namespace: dict[str, Any], target: str | None,
             assignment: str | None) -> tuple[Callable[..., Any], str]:
    if target is None and assignment is None:
        for info in registry.inference_order():
            if callable(namespace.get(info.function)):
                return namespace[info.function], info.id
        wanted = " or ".join(f"`{info.function}`" for info in registry.inference_order())
        raise NameError(f"no function {wanted} is defined in this notebook yet; run the cell "
                        "that defines it first")
    assignment_id = _assignment_for(target or "", assignment)
    wanted = (registry.get(assignment_id).function if target in (None, *registry.ids())
              else str(target))
    function = namespace.get(wanted)
    if not callable(function):
        raise NameError(f"no function `{wanted}` is defined in this notebook yet; run the "
                        f"cell that defines it first")
    return function, assignment_id


def _show(feedback: Feedback) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(feedback)
        return
    shell = get_ipython()
    in_kernel = shell is not None and (hasattr(shell, "kernel")  # Jupyter, VS Code, Colab
                                       or "IPKernelApp" in getattr(shell, "config", {}))
    if in_kernel:  # one bundle: the HTML, and the text report for front ends without HTML
        display({"text/html": feedback._repr_html_(), "text/plain": str(feedback)}, raw=True)
    else:  # a terminal IPython shows text
        print(feedback)
