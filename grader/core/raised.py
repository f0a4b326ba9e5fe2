"""Stage 4e (pure): a call that raised on a shape, told as a diagnosis.

When a submission names no misconception and its calls fail with a shape error (a broadcast, a
reshape, a product of arrays whose sizes disagree), the raw exception alone says numbers a
beginner cannot place. This finds the line that raised (the traceback into the submission), the
shapes the error names, and, of the arrays the line reads, the shape each argument had on that
test input and the line each computed array comes from, with its shape on a traced call that
worked: which array had which shape against what the line needed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import numpy as np

from grader.core.assignments import Assignment
from grader.core.divergence import Divergence
from grader.core.locate import parameter_names, quote
from grader.model import CallOutcome, Probe, TracedValue

_FRAME = re.compile(r'^  File "(?P<file>[^"\n]+)", line (?P<line>\d+), in ', re.MULTILINE)
_CELL_FILE = re.compile(r"^<submission cell (?P<cell>\d+)>$")
_SHAPE = re.compile(r"\((\d+(?:\s*[,x]\s*\d+)*)\s*,?\)|\[(\d+(?:\s*,\s*-?\d+)*)\]")
#: the shape errors of NumPy and torch, and what each says about the line (in a sentence)
_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"could not broadcast input array from shape"),
     "it writes a value of shape {0} into a place of shape {1}"),
    (re.compile(r"operands could not be broadcast together"),
     "it combines arrays of shapes {0} and {1}, which do not line up axis by axis from the end"),
    (re.compile(r"cannot reshape array of size (\d+)|is invalid for input of size (\d+)"),
     "it reshapes an array of {size} values into shape {0}, which holds {held}: the sizes "
     "of the new shape must multiply to the array's size"),
    (re.compile(r"mismatch in its core dimension|shapes cannot be multiplied|"
                r"shapes? \S+ and \S+ not aligned"),
     "it multiplies matrices whose inner sizes differ (the last axis of the first must be the "
     "second-to-last of the second)"),
    (re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
                r"at non-singleton dimension (\d+)"),
     "it combines two arrays whose sizes differ on one axis ({0} against {1}, on axis {2} "
     "of the longer shape)"),
)
_MODULES = frozenset({"np", "numpy", "torch", "tf", "jnp", "jax", "math", "F", "nn"})


def shape_error(assignment: Assignment, probes: Sequence[Probe],
                outcomes: Sequence[CallOutcome], sources: Sequence[str]) -> Divergence | None:
    """The first call that raised a shape error, told: the line, the shapes, the arrays it
    reads; None when no call raised one in the submission's own code."""
    order = sorted(range(len(probes)), key=lambda i: (probes[i].batched, i))
    for index in order:
        outcome = outcomes[index]
        if outcome.error_kind != "runtime-error":
            continue
        told = _told(assignment, probes, outcomes, index, sources)
        if told is not None:
            return told
    return None


def _told(assignment: Assignment, probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
          index: int, sources: Sequence[str]) -> Divergence | None:
    outcome, probe = outcomes[index], probes[index]
    lines = outcome.message.strip().splitlines()
    error = lines[-1] if lines else ""
    kind = next(((pattern, said) for pattern, said in _KINDS if pattern.search(error)), None)
    frames = _FRAME.findall(outcome.message)
    if kind is None or not frames:
        return None
    filename, line_text = frames[-1]
    cell_match = _CELL_FILE.match(filename)
    cell, line = (int(cell_match["cell"]) if cell_match else None), int(line_text)
    place = quote(cell, line, "the line that raised", sources)
    if place is None:
        return None
    pattern, said = kind
    numbers = pattern.search(error)
    shapes = [_as_shape(a or b) for a, b in _SHAPE.findall(error[numbers.end() if numbers
                                                                 else 0:])]
    size = next((group for group in (numbers.groups() if numbers else ()) if group), "")
    if "{size}" in said:
        held = _held(shapes[0]) if shapes else "?"
        what = said.format(*(shapes + ["?"])[:1], size=size, held=held)
    elif numbers is not None and numbers.groups():
        what = said.format(*numbers.groups())
    else:
        what = said.format(*(shapes + ["?", "?"])[:2])
    where = (f"code cell {cell}, " if cell else "") + f"line {line}"
    reads = _what_it_reads(assignment, probes, outcomes, probe, cell, line, sources,
                           "{size}" in said)
    return Divergence("error", f"Your code raised on test input '{probe.id}' at {where} "
                               f"({error.strip()}): {what}.{reads}", place)


def _held(shape: str) -> str:
    """How many values an array of ``shape`` ("(4, 2, 12)") holds (a -1 in it: unknown)."""
    sizes = [int(s) for s in re.findall(r"-?\d+", shape)]
    return str(int(np.prod(sizes))) if sizes and min(sizes) >= 0 else "another number"


def _as_shape(text: str) -> str:
    sizes = [s for s in re.split(r"\s*[,x]\s*", text.strip()) if s]
    return "(" + ", ".join(sizes) + ("," if len(sizes) == 1 else "") + ")"


def _what_it_reads(assignment: Assignment, probes: Sequence[Probe],
                   outcomes: Sequence[CallOutcome], probe: Probe, cell: int | None, line: int,
                   sources: Sequence[str], reshape: bool = False) -> str:
    """A sentence on the arrays the line reads: each argument's shape on this input, each
    computed array's line and its shape where a traced call worked."""
    source = sources[(cell or 1) - 1] if sources else ""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ""
    read = _names_read(tree, line)
    if not read:
        return ""
    parameters = dict(zip(parameter_names(sources, assignment.function), probe.args))
    made = _lines_made(tree, line)
    worked = [(p, o) for p, o in zip(probes, outcomes) if p.traced and o.ok and o.traced]
    arguments = [f"`{name}` has shape {tuple(parameters[name].shape)}" for name in read
                 if name not in made and isinstance(parameters.get(name), np.ndarray)]
    computed = []
    for name in (name for name in read if name in made):
        at, position, count = made[name]
        shape = _traced_shape(worked, cell, at, position, count)
        if shape is not None:
            computed.append(f"`{name}` (line {at}, {shape})")
        elif not worked and name not in parameters:
            computed.append(f"`{name}` (line {at})")
    said = []
    if arguments:
        said.append("on this input " + " and ".join(arguments[:2]))
    if computed:
        said.append("it uses " + ", ".join(computed[:3])
                    + (f", shapes on test input '{worked[0][0].id}', where the call worked"
                       if worked else ""))
    if not said:
        return ""
    ending = ("Check each size of the new shape against these." if reshape else
              "Find the one whose shape does not fit this line and fix the line that made it.")
    return " Of the arrays it reads, " + "; ".join(said) + ". " + ending


def _names_read(tree: ast.Module, line: int) -> list[str]:
    """The names the statement on ``line`` reads (not the array it writes into)."""
    names: dict[str, None] = {}
    for statement in ast.walk(tree):
        if not isinstance(statement, ast.stmt) or statement.lineno != line or \
                isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        written = {id(node) for target in getattr(statement, "targets", ())
                   if isinstance(target, ast.Subscript) for node in ast.walk(target.value)}
        value = getattr(statement, "value", None) or statement
        for node in ast.walk(value):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                    node.id not in _MODULES and id(node) not in written:
                names.setdefault(node.id)
        break
    return list(names)


def _lines_made(tree: ast.Module, line: int) -> dict[str, tuple[int, int, int]]:
    """Each name assigned above ``line``: its last assignment's line, its place among the
    names that line assigns, and how many it assigns."""
    made: dict[str, tuple[int, int, int]] = {}
    assigns = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Assign)
                      and node.lineno < line and len(node.targets) == 1),
                     key=lambda node: node.lineno)
    for node in assigns:
        target = node.targets[0]
        names = [target] if isinstance(target, ast.Name) else list(target.elts) \
            if isinstance(target, (ast.Tuple, ast.List)) else []
        for position, element in enumerate(names):
            if isinstance(element, ast.Name):
                made[element.id] = (node.lineno, position, len(names))
    return made


def _traced_shape(worked: Sequence[tuple[Probe, CallOutcome]], cell: int | None, line: int,
                  position: int, count: int) -> tuple[int, ...] | None:
    for _, outcome in worked[:1]:
        at: list[TracedValue] = [t for t in outcome.traced if t.cell == cell and t.line == line]
        if len(at) == count:
            return tuple(at[position].array.shape)
    return None
