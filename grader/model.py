"""Plain data passed between the pipeline stages: load -> sandbox -> compare/diagnose -> report."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numpy.typing import NDArray

    Array = NDArray[Any]
else:
    Array = Any

DEFAULT_SEED = 0


#: SPEC section 4 ``errors[].kind``, and two more: ``isolation-unavailable`` (the submission was
#: not run: no filesystem isolation here, see ``--unsafe-no-fs-isolation``) and
#: ``missing-dependency`` (it imports a package this environment lacks)
ERROR_KINDS = (
    "syntax-error",
    "missing-function",
    "wrong-signature",
    "runtime-error",
    "timeout",
    "memory-limit",
    "invalid-notebook",
    "wrong-shape",
    "non-finite-output",
    "forbidden-import",
    "crashed",
    "isolation-unavailable",
    "missing-dependency",
)


@dataclass(frozen=True)
class Probe:
    """One call of the student's function: the inputs, what it is for, and where it comes from.

    ``args`` holds arrays and plain scalars; the same array object may appear twice (self-attention
    passes X as both X_q and X_kv), and the child receives it twice as one object.
    """

    id: str
    args: tuple[Any, ...]
    tags: frozenset[str]
    question_bank: tuple[str, ...] = ()
    #: call the function a second time on the same (possibly mutated) objects
    repeat: bool = False
    #: what concept checks need to know about how the probe was built
    meta: Mapping[str, Any] = field(default_factory=dict)
    #: call once more, recording the intermediate arrays line by line (``grader.core.locate``)
    traced: bool = False

    @property
    def batched(self) -> bool:
        return bool(self.tags & {"batched"})

    @property
    def size(self) -> int:
        return sum(int(getattr(a, "size", 0)) for a in self.args if hasattr(a, "shape"))

    def input_arrays(self) -> list[tuple[int, Array]]:
        """The distinct input arrays, in argument order, each with the position of the first
        argument that passes it (an array passed twice is one input)."""
        import numpy as np  # (not at the top: the model is imported where NumPy need not be)

        first: dict[int, tuple[int, Array]] = {}
        for position, value in enumerate(self.args):
            if isinstance(value, np.ndarray) and id(value) not in first:
                first[id(value)] = (position, value)
        return list(first.values())


@dataclass(frozen=True)
class TracedValue:
    """An array the submission's code computed during a traced call, and where: ``cell`` is the
    notebook cell (None for a .py file), ``line`` the line in it, ``depth`` how many calls below
    the graded function; ``changes_input``: this line changed an input array in place (the
    array is then the input as changed); ``chain``: the values of one array changed in place,
    line after line, share it (a label, the same for them only)."""

    cell: int | None
    line: int
    depth: int
    array: Array
    changes_input: bool = False
    chain: int = -1


#: how an ``ok`` outcome's ``message`` starts when a task's ``read_outputs`` set one of its
#: outputs aside as of the wrong shape (the rest still compared): the report's ``wrong-shape``
#: error quotes what follows
SET_ASIDE = "set aside: "


@dataclass(frozen=True)
class CallOutcome:
    """What one call of the student's function did, as received from the child.

    ``error_kind`` is None when the call returned arrays. ``outputs`` are the arrays it
    returned, by the task's names for them, in the task's order (the first is the output the
    reference checks compare first; an optional one left out is absent). ``inputs_after`` are
    the argument arrays as the child saw them after the call (for the mutation check).
    """

    probe_id: str
    error_kind: str | None = None
    message: str = ""
    outputs: Mapping[str, Array] = field(default_factory=dict)
    #: the first output of a second call on the same objects (``Probe.repeat``)
    repeat_output: Array | None = None
    inputs_after: tuple[Array, ...] = ()
    seconds: float = 0.0
    traced: tuple[TracedValue, ...] = ()

    @property
    def output(self) -> Array | None:
        """The first output the call returned (None when it returned none)."""
        return next(iter(self.outputs.values()), None)

    def returned(self, name: str) -> Array | None:
        """The output of that name, or None when the call did not return it."""
        return self.outputs.get(name)

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.output is not None


@dataclass(frozen=True)
class GraderError:
    """An error for the report: one of ERROR_KINDS and a message for the student."""

    kind: str
    message: str
    #: False for an error that did not change the score (shown as a note after the grade)
    affects_grade: bool = True

    def __post_init__(self) -> None:
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {self.kind!r}")


def line_words(cell: int | None, line: int) -> str:
    """"line 7", or in a notebook "code cell 3, line 7" (every view says a place so)."""
    return f"code cell {cell}, line {line}" if cell else f"line {line}"


@dataclass(frozen=True)
class SourcePlace:
    """A line of the submission: the notebook cell (None for a .py file), the line in it, its
    text, and which value of the computation it computes (see ``grader.core.locate``)."""

    cell: int | None
    line: int
    code: str
    computes: str
    #: the code that replaces the line so that the mistake is gone (``reference.edits``), if
    #: the line has a shape the mistake's rewrites know
    fixed: str | None = None
    #: other lines where the same mistake is written, each with its own literal fix
    also: tuple[SourcePlace, ...] = ()
    #: the line computes a value nothing uses (the finding is that it is not used)
    unused: bool = False


@dataclass(frozen=True)
class Finding:
    """A misconception the submission's outputs show, and the line where it enters if known."""

    id: str
    evidence: str
    place: SourcePlace | None = None
    #: the fix in a sentence about the quoted line itself, where the row's general sentence
    #: would name code the submission does not have (see ``diagnose``)
    fix: str | None = None
    #: the framework the submission computes with ("numpy", "torch", "tf", "jax"): the fix and
    #: the explanation show their code in its words
    dialect: str = "numpy"
    #: the submission's own names of the arguments, (canonical, its name) pairs: the code of
    #: the fix and the explanation uses them
    names: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CheckResult:
    id: str
    category: str
    passed: bool
    points: float
    max_points: float
    message: str
    question_bank: tuple[str, ...] = ()
    hidden: bool = False


@dataclass
class RunInfo:
    """What the sandbox learned about the submission, beyond per-call outcomes."""

    defined_functions: tuple[str, ...] = ()
    #: name -> [[parameter, kind, has default], ...] for the assignment functions it defines
    forbidden: list[str] = field(default_factory=list)
    load_errors: list[GraderError] = field(default_factory=list)
    fatal: GraderError | None = None
    stdout: str = ""
    isolation: tuple[str, ...] = ()
    #: the tiling check's measured calls (``CallPlan.measured``), in order: the child's
    #: measurement (``peak.measure``), or why there is none (a sentence)
    measurements: list[dict[str, Any] | str] = field(default_factory=list)


def printable_name(name: str) -> str:
    """A file name as one line of text any encoder takes: bytes that are not UTF-8 shown as
    ``\\xff``, control characters as escapes."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True)
class Submission:
    """A loaded submission: the code to run, as one source (.py) or a list of cells (.ipynb)."""

    path: Path
    kind: str  # "py" or "ipynb"
    sources: tuple[str, ...]
