"""Stage 4c (pure): the line of the submission where a named mistake enters.

Diagnosis has already named the mistake from the outputs alone. On a traced call (``Probe.traced``:
the child recorded the arrays the code computed, line by line), the recipe that explains the
submission is compared, stage by stage, with the same recipe without this mistake: the first
stage where they part is where the mistake enters, and the line quoted is the one that computed
exactly that stage's value (and nothing the recipe without the mistake computes, nor an input).
When no line computed it (a one-line expression inside a library call, an omission that only
shows later and never as a value of its own), the next stage is tried; when none is found, no
line is claimed. A step written but never used (its right value computed, the output without
it) is quoted as such. Code that works on 2-D inputs only is quoted where its first batched call
failed (the traceback into the submission).

``located`` gives a finding its quoted line and fix; ``in_the_submissions_words`` the framework
and the names its sentences are told in.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from grader.core.assignments import Assignment
from grader.core.tasks import tasks
from grader.model import (
    Array,
    CallOutcome,
    Finding,
    Probe,
    SourcePlace,
    TracedValue,
    line_words,
)
from reference import catalogue, edits
from reference.stages import TileBlocks, TileStates

#: scores at or below this are "blocked" whatever the fill value (-inf, -1e9, finfo.min)
BLOCKED_BELOW = -1e4

#: what each shared stage (``reference.stages``) is, in a sentence's words; a task's own stages
#: have theirs in its module (``Task.stage_words``)
SHARED_STAGE_WORDS: Mapping[str, str] = {
    "q": "the projected queries", "k": "the projected keys", "v": "the projected values",
    "input": "a change to an input array", "shifted": "the shifted scores",
    "q_heads": "the queries split into heads", "k_heads": "the keys split into heads",
    "v_heads": "the values split into heads", "q_rotated": "the rotated queries",
    "k_rotated": "the rotated keys", "v_rotated": "the rotated values", "scores": "the scores",
    "scaled": "the scaled scores", "masked": "the masked scores",
    "exponentials": "the exponentials", "softmax": "the softmax weights",
    "weights": "the attention weights", "heads": "the heads' outputs",
    "merged": "the merged heads", "output": "the output",
}


@functools.cache
def stage_words() -> Mapping[str, str]:
    """What each stage any pipeline records is, in a sentence's words: the shared stages' and
    every task's own (a stage two tasks record is told alike in both)."""
    words = dict(SHARED_STAGE_WORDS)
    for task in tasks().values():
        for stage, told in task.stage_words.items():
            if words.setdefault(stage, told) != told:
                raise ValueError(f"the stage {stage!r} is told two ways: {words[stage]!r} and "
                                 f"{told!r} ({task.name})")
    return MappingProxyType(words)


@dataclass(frozen=True)
class Place:
    """Where a mistake enters: the notebook cell (None for a .py file), the line, the stage."""

    cell: int | None
    line: int
    stage: str
    #: a skipped step: the stage of the correct computation whose value the line computes
    #: (the scores, used as the scaled scores), or None
    used: str | None = None
    #: the line computes this stage's correct value, but nothing uses it
    unused: bool = False
    #: ... and (cell, line) of the line whose value went on in its place, if one computed it
    unused_for: tuple[int | None, int] | None = None
    #: (cell, line) of the other lines that wrote the mistaken values into the same array, in
    #: place (a loop's sine line beside its cosine line)
    writers: tuple[tuple[int | None, int], ...] = ()


def locate(assignment: Assignment, probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
           misconception_id: str, recipe: Mapping[str, str]) -> Place | None:
    """The line where ``misconception_id`` (one of ``recipe``'s mistakes) enters, or None."""
    row = catalogue.BY_ID[misconception_id]
    if row.detector == "input-mutation":
        return _first_input_change(probes, outcomes)
    if not catalogue.own_choices(misconception_id, recipe) or not row.stages:
        return None
    return _on_a_traced_call(assignment, probes, outcomes, misconception_id, recipe, row.stages)


def also_places(assignment: Assignment, probes: Sequence[Probe],
                outcomes: Sequence[CallOutcome], misconception_id: str,
                recipe: Mapping[str, str], first: Place) -> list[Place]:
    """Other lines where the same mistake is written (the row's ``also`` stages), one per
    stage, none of them the first line."""
    found: dict[tuple[int | None, int], Place] = {}
    for stage in catalogue.BY_ID[misconception_id].also:
        place = _on_a_traced_call(assignment, probes, outcomes, misconception_id, recipe,
                                  (stage,))
        if place is not None and (place.cell, place.line) != (first.cell, first.line):
            found.setdefault((place.cell, place.line), place)
    return list(found.values())


def _on_a_traced_call(assignment: Assignment, probes: Sequence[Probe],
                      outcomes: Sequence[CallOutcome], misconception_id: str,
                      recipe: Mapping[str, str], stages: Sequence[str]) -> Place | None:
    """The line of the first of ``stages`` where the mistake shows, on the first traced call
    that shows it."""
    own = catalogue.own_choices(misconception_id, recipe)
    without = {knob: choice for knob, choice in recipe.items() if knob not in own}
    at_call = catalogue.BY_ID[misconception_id].at_call
    running = _running_lines(assignment, probes, outcomes, recipe)
    for probe, outcome in zip(probes, outcomes):
        if probe.traced and outcome.traced:
            place = _first_place(assignment, probe, outcome.traced, recipe, without, stages,
                                 at_call, running)
            if place is not None:
                return place
    return None


def _running_lines(assignment: Assignment, probes: Sequence[Probe],
                   outcomes: Sequence[CallOutcome], recipe: Mapping[str, str]
                   ) -> frozenset[tuple[int | None, int]]:
    """The lines that update running state (``TileStates``): a value they computed, on some
    traced call, is the state after a key tile that the last tile still changes (not a
    constant: a tile's zeros say nothing). Their value after the last tile is not the line a
    whole output is quoted at (L = m is the lse's line, not the running max's)."""
    lines: set[tuple[int | None, int]] = set()
    for probe, outcome in zip(probes, outcomes):
        if not (probe.traced and outcome.traced):
            continue
        states = [_unfinished(value) for value in stages_of(assignment, recipe, probe).values()
                  if isinstance(value, TileStates)]
        states = [value for value in states if len(value)]
        lines.update((t.cell, t.line) for t in outcome.traced if not t.changes_input
                     and (t.cell, t.line) not in lines and np.unique(t.array).size > 1
                     and any(same(t.array, s) for s in states))
    return frozenset(lines)


def _unfinished(states: TileStates) -> TileStates:
    """The states after the key tiles whose state the later tiles still change."""
    final = np.asarray(states[-1])
    changed = [i for i in range(len(states) - 1) if not _close(np.asarray(states[i]), final)]
    return np.asarray(states)[changed].view(TileStates)


def _first_input_change(probes: Sequence[Probe], outcomes: Sequence[CallOutcome]
                        ) -> Place | None:
    for probe, outcome in zip(probes, outcomes):
        changed = [t for t in outcome.traced if t.changes_input] if probe.traced else []
        if changed:
            return Place(changed[0].cell, changed[0].line, "input")
    return None


def located(finding: Finding, assignment: Assignment, probes: Sequence[Probe],
            outcomes: Sequence[CallOutcome], recipe: Mapping[str, str], sources: Sequence[str],
            *, from_failed_calls: bool = False) -> Finding:
    """``finding`` with the submission's line where it enters, quoted, and its fix, when the
    line is found (from the traced values; ``from_failed_calls``: code that works on 2-D inputs
    only, from where its batched calls failed)."""
    if not sources:
        return finding
    try:
        place = _quoted(assignment, probes, outcomes, finding.id, recipe, sources)
    finally:
        _SAME.clear()  # (what ``same`` found holds the arrays: none is kept beyond this call)
    if place is not None and place.unused:
        return dataclasses.replace(finding, place=place, fix=_unused_fix(place))
    if place is None and from_failed_calls:
        return _where_batches_fail(assignment, probes, outcomes, finding, sources)
    if place is not None and place.computes in _COMPARED.values():
        return dataclasses.replace(finding, place=place,
                                   fix=_positions_fix(assignment, probes, recipe, place))
    table = _doubled_table(assignment, probes, outcomes, recipe, place, sources) \
        if place is not None and finding.id == _HALVES else None
    if table is not None:
        return dataclasses.replace(finding, place=place, fix=table)
    if place is not None and finding.id in _IN_COMPLEX_TERMS and _complex(place):
        return dataclasses.replace(finding, place=place, fix=_IN_COMPLEX_TERMS[finding.id].format(
            where=line_words(place.cell, place.line).capitalize()))
    thrown = _thrown_away_before(place, sources) if place is not None else None
    if thrown is not None:  # the step may be written, its result never kept: say so first
        row_fix = catalogue.wording(finding.id, assignment.wording_terms()).fix
        return dataclasses.replace(finding, place=place, fix=f"{thrown} {row_fix}")
    return dataclasses.replace(finding, place=place)


#: the fix of a mistake quoted on a line that computes with complex numbers (a RoPE that turns
#: each pair x1 + i x2 by a unit number), in those terms: such code has no sine terms
_IN_COMPLEX_TERMS = {
    "rope-rotation-reversed":
        "{where} turns each pair, as the complex number x1 + i x2, by exp(-i a): that is a "
        "rotation by -a. Multiply by exp(+i a) instead (`np.exp(1j * a)`, or "
        "`torch.polar(ones, a)`), which turns it by +a.",
}


def _complex(place: SourcePlace) -> bool:
    """Does the quoted line compute with complex numbers (the values of its stage were traced
    as complex: ``rotations``; or it multiplies by an imaginary unit or builds a polar)?"""
    return place.computes == stage_words().get("rotations") or bool(
        re.search(r"\b1j\b|\bpolar\(|\bview_as_complex\(|\bcomplex\(", place.code))


#: the RoPE row whose table of angles, doubled for one layout, is told with the quoted line
_HALVES = "rope-halves-not-interleaved"


def _doubled_table(assignment: Assignment, probes: Sequence[Probe],
                   outcomes: Sequence[CallOutcome], recipe: Mapping[str, str],
                   place: SourcePlace, sources: Sequence[str]) -> str | None:
    """For RoPE code that turns feature i with feature i + d/2: the line that doubled its
    (n, d/2) angles into an (n, d) table (two halves, or each angle twice in a row), found
    among the traced values (the angles, or their cosines or sines), told with the quoted line
    and the results the assignment's layout computes; None when no line made such a table."""
    for probe, outcome in zip(probes, outcomes):
        if not (probe.traced and outcome.traced):
            continue
        table = stages_of(assignment, recipe, probe).get("angle_table")
        if table is None:
            continue
        forms = (table, np.cos(table), np.sin(table))
        made = next((t for t in outcome.traced if not t.changes_input and t.line != place.line
                     and any(_same(t.array, form) for form in forms)), None)
        if made is None:
            continue
        line = quote(made.cell, made.line, "", sources)
        if line is None:
            return None
        halves = recipe.get("rope_pairs") == "halves"
        layout = ("lays the d/2 angles out as two halves (angle i at features i and i + d/2), "
                  "and" if halves else "gives each angle to two neighbouring features, as this "
                  "assignment's layout needs; but")
        where = line_words(place.cell, place.line)
        does = ("turns feature i with feature i + d/2" if recipe.get("rope_partner", "mixed")
                == "mixed" else "computes on that layout")
        return (f"{line_words(line.cell, line.line).capitalize()}, `{line.code}`, {layout} "
                f"{where} {does}. Turn neighbours instead: "
                "with `x1, x2 = x[..., 0::2], x[..., 1::2]` and `cos`, `sin` of the (n, d/2) "
                "angles, the results are `x1 * cos - x2 * sin` in the even features "
                "(`out[..., 0::2]`) and `x1 * sin + x2 * cos` in the odd ones "
                "(`out[..., 1::2]`).")
    return None


#: the stages of a mask built by comparing positions, as a report tells them
_COMPARED = {"query_positions": "the query positions the mask compares",
             "key_positions": "the key positions the mask compares"}


def _positions_fix(assignment: Assignment, probes: Sequence[Probe], recipe: Mapping[str, str],
                   place: SourcePlace) -> str:
    """The fix of a line that computed the positions a mask compares, shifted: by how much, as
    the values show (the recipe's positions against the correct ones, on a traced call)."""
    stage = next(name for name, words in _COMPARED.items() if words == place.computes)
    correct = {knob: choice for knob, choice in recipe.items() if not knob.startswith("mask_")}
    shift = 0.0
    for probe in (p for p in probes if p.traced):
        mistaken, right = stages_of(assignment, recipe, probe), stages_of(assignment, correct,
                                                                            probe)
        if stage in mistaken and stage in right and mistaken[stage].size and \
                not np.array_equal(mistaken[stage], right[stage]):
            shift = float((mistaken[stage] - right[stage]).flat[0])
            break
    where = line_words(place.cell, place.line).capitalize()
    rule = ("query i sits at position m - n + i (i when m = n), key j at position j, and a "
            "query may see every key up to its own position, itself included (`key <= query`)")
    if abs(shift) != 1:
        return (f"{where} counts the query positions from 0, as if no keys came before the "
                f"queries: {rule}. Start them at m - n (`np.arange(m - n, m)`).")
    whose = "each query's" if stage == "query_positions" else "each key's"
    off = "one more than" if shift == 1 else "one less than"
    return (f"{where} makes {whose} position {off} it is: {rule}. Compute the positions "
            "without that step of one and keep the comparison as it is.")


#: array methods and functions that return a new array and change nothing: a statement that
#: is only such a call throws its result away
_RETURNS_NEW = frozenset({"transpose", "permute", "swapaxes", "moveaxis", "reshape", "view",
                          "masked_fill", "softmax", "contiguous", "squeeze", "unsqueeze",
                          "astype", "where", "flatten", "expand_dims", "matmul"})
#: how far above the quoted line a thrown-away result is looked for
_THROWN_WITHIN = 3


def _thrown_away_before(place: SourcePlace, sources: Sequence[str]) -> str | None:
    """A sentence on a statement just above the quoted line, in the same function, that computes
    a new array and keeps nothing (``x.transpose(1, 2)`` alone on its line), or None."""
    source = sources[(place.cell or 1) - 1] if sources else ""
    tree = _parsed(source)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not (
                node.lineno <= place.line <= (node.end_lineno or node.lineno)):
            continue
        for statement in ast.walk(node):
            if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                    and 0 < place.line - statement.lineno <= _THROWN_WITHIN
                    and _called_name(statement.value.func) in _RETURNS_NEW):
                code = ast.get_source_segment(source, statement) or ""
                target = _first_name(statement.value)
                keep = f" (`{target} = {code}`)" if target and "\n" not in code else ""
                return (f"{line_words(place.cell, statement.lineno).capitalize()}, `{code}`, "
                        f"computes a new array and throws it away: keep its result{keep}.")
    return None


def _dropped_after(place: Place, sources: Sequence[str]) -> SourcePlace | None:
    """A skipped step written just below the line whose value went on in its place, as a
    statement that computes from that line's name and keeps nothing (``scores + mask`` alone on
    its line): quoted as the step's line whose value nothing uses, fixed by keeping it under
    that name. None when there is no such statement."""
    source = sources[(place.cell or 1) - 1] if sources else ""
    tree = _parsed(source)
    if tree is None:
        return None
    assigned = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)
                and node.lineno == place.line and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)]
    if not assigned:
        return None
    name = assigned[0].targets[0].id  # type: ignore[attr-defined]
    for statement in ast.walk(tree):
        if not (isinstance(statement, ast.Expr)
                and isinstance(statement.value, (ast.BinOp, ast.Call))
                and 0 < statement.lineno - place.line <= _THROWN_WITHIN
                and statement.lineno == statement.end_lineno
                and any(isinstance(node, ast.Name) and node.id == name
                        for node in ast.walk(statement.value))):
            continue
        quoted = quote(place.cell, statement.lineno, stage_words()[place.stage] + UNUSED, sources)
        code = ast.get_source_segment(source, statement.value)
        if quoted is None or code is None:
            return None
        return dataclasses.replace(quoted, unused=True, fixed=f"{name} = {code}")
    return None


def _called_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else ""


def _first_name(call: ast.Call) -> str | None:
    """The array a call works on: ``x`` of ``x.transpose(...)``, or the first argument's."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id not in ("np", "numpy", "torch", "tf", "jnp", "F"):
        return func.value.id
    first = call.args[0] if call.args else None
    return first.id if isinstance(first, ast.Name) else None


def in_the_submissions_words(findings: list[Finding], assignment: Assignment,
                             sources: Sequence[str]) -> list[Finding]:
    """The findings, each told in the framework its line (or else the submission) computes with
    and in the submission's own names of the arguments."""
    if not findings:
        return findings
    whole = "\n".join(sources)
    names = tuple(student_names(assignment, sources).items())
    return [dataclasses.replace(f, dialect=edits.dialect(f.place.code if f.place else "", whole),
                                names=names)
            for f in findings]


#: what a quoted line computes when nothing uses it (``_unused``)
UNUSED = ", but nothing uses that value"


def _unused_fix(place: SourcePlace) -> str:
    """The fix of a line whose value nothing uses: use it."""
    return (f"{line_words(place.cell, place.line).capitalize()} computes "
            f"{place.computes.removesuffix(UNUSED)}, but the code goes on without that value: "
            + ("give it the name the rest of the code reads, as shown." if place.fixed else
               "use it from there on."))


def _quoted(assignment: Assignment, probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
            misconception_id: str, recipe: Mapping[str, str], sources: Sequence[str]
            ) -> SourcePlace | None:
    """The line where the mistake enters, quoted, with its literal fix and the other lines
    the same mistake is written on."""
    place = locate(assignment, probes, outcomes, misconception_id, recipe)
    if place is None:
        return None
    if place.unused:
        return _unused(place, sources)
    dropped = _dropped_after(place, sources) if place.used is not None else None
    if dropped is not None:
        return dropped
    computes = stage_words()[place.stage]
    if place.used is not None:
        computes = f"{stage_words().get(place.used, place.used)}, used as {computes}"
    quoted = quote(place.cell, place.line, computes, sources)
    if quoted is None:
        return None
    held = held_names(assignment, probes, outcomes, recipe, sources, place) \
        if catalogue.BY_ID[misconception_id].rewrites else {}
    first = with_literal_fix(quoted, assignment, misconception_id, place.stage, sources,
                             alone=False, held=held)
    if first.fixed is None:
        return first
    others = []
    written = [Place(cell, line, place.stage) for cell, line in place.writers]
    for other in [*written, *also_places(assignment, probes, outcomes, misconception_id, recipe,
                                         place)]:
        line = quote(other.cell, other.line, stage_words()[other.stage], sources)
        if line is not None:
            line = with_literal_fix(line, assignment, misconception_id, other.stage, sources,
                                    alone=False)
            if line.fixed is not None:
                others.append(line)
    if not others:  # the first line's fix must then do the whole job by itself
        return with_literal_fix(quoted, assignment, misconception_id, place.stage, sources,
                                held=held)
    return dataclasses.replace(first, also=tuple(others))


#: the running quantities a literal fix may name (``edits.Context.held``), and how each is
#: broadcast against the accumulator (``..._column``)
HELD = ("rescale", "running_max", "running_sum", "D")


def held_names(assignment: Assignment, probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
               recipe: Mapping[str, str], sources: Sequence[str], place: Place
               ) -> dict[str, str]:
    """The code's own names of the running quantities (``HELD``) as they are held when the
    quoted line first runs: on a traced call, the last value before it that is one key tile's
    running state (as the code computes it: ``recipe``), named by the line that made it. A
    quantity kept with a last axis of one is told as such. Empty where no running state is
    recorded, or the line never ran."""
    for probe, outcome in zip(probes, outcomes):
        if not (probe.traced and outcome.traced):
            continue
        traced = outcome.traced
        first = next((i for i, t in enumerate(traced)
                      if (t.cell, t.line) == (place.cell, place.line)), None)
        stages = stages_of(assignment, recipe, probe)
        if first is None or not any(isinstance(stages.get(s), TileStates) for s in HELD):
            continue
        found: dict[str, str] = {}
        for stage in HELD:
            value = stages.get(stage)
            holder = next((t for t in reversed(traced[:first]) if not t.changes_input
                           and isinstance(value, TileStates) and _same(t.array, value)), None)
            name = _assigned_name(holder.cell, holder.line, sources) if holder else None
            if holder is None or name is None:
                continue
            kept = holder.array.shape[-1:] == (1,)
            found[stage] = f"{name}[..., 0]" if kept else name
            found[f"{stage}_column"] = name if kept else f"{name}[..., None]"
            if stage == "D" and not _held_by_tile(probes, outcomes, holder):
                rows = _query_rows(assignment, sources)  # the whole D: the tile's rows of it
                found.pop("D")
                found["D_column"] = f"{name}[..., {rows}, {':' if kept else 'None'}]"
                if rows is None:
                    found.pop("D_column")
        return found
    return {}


def _held_by_tile(probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
                  holder: TracedValue) -> bool:
    """Does the holder's line hold a query tile's rows (fewer rows than the call has queries,
    on some traced call), rather than every row?"""
    for probe, outcome in zip(probes, outcomes):
        n = np.shape(probe.args[1])[-2] if len(probe.args) > 1 else 0
        for t in outcome.traced if probe.traced else ():
            if (t.cell, t.line) == (holder.cell, holder.line) and t.array.ndim:
                rows = t.array.shape[-2] if t.array.shape[-1:] == (1,) and t.array.ndim > 1 \
                    else t.array.shape[-1]
                if rows < n:
                    return True
    return False


def _query_rows(assignment: Assignment, sources: Sequence[str]) -> str | None:
    """The one row slice (``i0:i1``) the code takes of its queries and of the upstream
    gradient (``grad_output[..., i0:i1, :]``), in its own words; None unless there is
    exactly one."""
    names = student_names(assignment, sources)
    arrays = [names[a] for a in ("Q", "grad_output") if names.get(a)]
    if not arrays:
        return None
    pattern = re.compile(rf"\b(?:{'|'.join(map(re.escape, arrays))})\[\s*(?:\.\.\.\s*,\s*)?"
                         r"(?P<rows>[^,\[\]:]+:[^,\[\]:]+?)\s*(?:,\s*:\s*)?\]")
    found = {match["rows"].strip() for source in sources for match in pattern.finditer(source)}
    return found.pop() if len(found) == 1 else None


def _assigned_name(cell: int | None, line: int, sources: Sequence[str]) -> str | None:
    """The variable a one-line assignment on that line binds or writes into (``x = ...``,
    ``x[...] = ...``, ``x += ...``), or None (no such statement, or several targets)."""
    tree = _parsed(sources[(cell or 1) - 1] if sources else "")
    if tree is None:
        return None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) \
                and node.lineno == line == node.end_lineno:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1:
                return None
            target = targets[0]
            while isinstance(target, ast.Subscript):
                target = target.value
            names.add(target.id if isinstance(target, ast.Name) else None)
    return names.pop() if len(names) == 1 else None


#: a frame of a student traceback (``grader/sandbox/worker.py``): the file, or a notebook's
#: "<submission cell N>", and the line
_FRAME = re.compile(r'^  File "(?P<file>[^"\n]+)", line (?P<line>\d+), in ', re.MULTILINE)
_CELL_FILE = re.compile(r"^<submission cell (?P<cell>\d+)>$")


def _where_batches_fail(assignment: Assignment, probes: Sequence[Probe],
                        outcomes: Sequence[CallOutcome], finding: Finding,
                        sources: Sequence[str]) -> Finding:
    """A finding of code that works on 2-D inputs only, placed where the first batched call
    that raised stopped in the submission's own code, with a fix about that line: what on it
    works on 2-D arrays only (``K.T``, ``axis=1``, ``shape[1]``, ...), or else the error."""
    for probe, outcome in zip(probes, outcomes):
        frames = _FRAME.findall(outcome.message) if probe.batched and \
            outcome.error_kind == "runtime-error" else []
        if not frames:
            continue
        filename, line = frames[-1]
        cell = _CELL_FILE.match(filename)
        quoted = quote(int(cell["cell"]) if cell else None, int(line),
                       "the first line that fails on batched inputs", sources)
        if quoted is None:
            continue
        made = _made_two_d(assignment, probes, outcomes, quoted, outcome, probe, sources)
        if made is not None:
            return dataclasses.replace(finding, place=made[0], fix=made[1])
        quoted = with_literal_fix(quoted, assignment, finding.id, "batch", sources)
        if quoted.fixed is not None:
            also = [with_literal_fix(other, assignment, finding.id, "batch", sources)
                    for other in _function_lines(quoted.cell, sources)
                    if other.line != quoted.line]
            quoted = dataclasses.replace(quoted, also=tuple(o for o in also if o.fixed))
        context = edits.Context(assignment.task.softmax_alone, "batch",
                                edits.dialect(quoted.code, "\n".join(sources)))
        reasons = edits.two_d_only(quoted.code, context)
        where = line_words(quoted.cell, quoted.line)
        error = outcome.message.strip().splitlines()[-1].rstrip(".")
        cause = None if reasons else _cause_above(quoted, context, sources)
        if cause is not None:
            cause = with_literal_fix(cause, assignment, finding.id, "batch", sources)
        if cause is not None and cause.fixed:  # the crash follows from a line above it, with
            # a rewrite of its own (``K_t = K.T``; a loop over ``shape[0]`` has none: not claimed)
            fix = (f"{line_words(cause.cell, cause.line).capitalize()} works on 2-D inputs "
                   f"only: " + "; ".join(edits.two_d_only(cause.code, context))
                   + f". {where.capitalize()} is where batched inputs then fail ({error}).")
            kept = tuple(o for o in quoted.also if o.line != cause.line)
            return dataclasses.replace(finding, place=dataclasses.replace(cause, also=kept),
                                       fix=fix)
        fix = (f"{where.capitalize()} works on 2-D inputs only: " + "; ".join(reasons) + "."
               if reasons else
               f"{where.capitalize()} fails on inputs with leading batch dimensions ({error}). "
               "It already works from the last axes: one of the arrays it uses was made "
               "without the input's leading axes; give that array the input's shape."
               if _indexes_from_the_end(quoted.code) else
               f"{where.capitalize()} fails on inputs with leading batch dimensions ({error}): "
               "write it with operations that act on the last two axes, whatever comes "
               "before them.")
        return dataclasses.replace(finding, place=quoted, fix=fix)
    return finding


def _cause_above(crashed: SourcePlace, context: edits.Context, sources: Sequence[str]
                 ) -> SourcePlace | None:
    """The nearest line above the one that failed, in the same function, that works on 2-D
    inputs only (what the failing line then received), quoted; or None."""
    tree = _parsed(sources[(crashed.cell or 1) - 1] if sources else "")
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno < crashed.line <= (node.end_lineno or node.lineno):
            for line in range(crashed.line - 1, node.lineno, -1):
                above = quote(crashed.cell, line, "code that works on 2-D inputs only", sources)
                if above is not None and edits.two_d_only(above.code, context):
                    return above
    return None


_TARGET = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<rhs>[^=].*)$")


def _indexes_from_the_end(code: str) -> bool:
    """Does the line index its arrays with ``...`` (``out[..., t, i] = x[..., t, i]``), so that
    whatever comes before the last axes rides along on the line itself?"""
    try:
        tree = ast.parse(code.strip())
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(isinstance(node, ast.Subscript) and any(
        isinstance(part, ast.Constant) and part.value is Ellipsis
        for part in ast.walk(node.slice)) for node in ast.walk(tree))

#: the errors of values written into an array too small for them (NumPy, torch)
_WRITTEN_INTO = re.compile(r"could not broadcast input array from shape|"
                           r"expanded size of the tensor|shape mismatch: value tensor")
#: the functions that make a new array of a shape given in numbers, and their "_like" form
_MADE_OF_SHAPE = {"zeros": "zeros_like", "empty": "empty_like", "ones": "ones_like"}


def _made_two_d(assignment: Assignment, probes: Sequence[Probe],
                outcomes: Sequence[CallOutcome], failing: SourcePlace, outcome: CallOutcome,
                batched: Probe, sources: Sequence[str]) -> tuple[SourcePlace, str] | None:
    """A batched call that failed writing into an array (``out[..., t, i] = ...``) too small
    for what it writes, where that array was made with a fixed 2-D shape (``out = np.zeros((n,
    d))``, as the 2-D traced calls show: the array that line made had the output's shape): the
    line that made it, quoted, with a fix that makes it the input's shape. None otherwise."""
    if not _WRITTEN_INTO.search(outcome.message):
        return None
    source = sources[(failing.cell or 1) - 1] if sources else ""
    made = _array_made_for(source, failing.line)
    if made is None:
        return None
    name, line, function, module = made
    shapes = [o.output.shape for p, o in zip(probes, outcomes)
              if p.traced and o.ok and o.output is not None]
    traced = [t for p, o in zip(probes, outcomes) if p.traced for t in o.traced
              if t.cell == failing.cell and t.line == line]
    if not shapes or not any(t.array.ndim == 2 and t.array.shape in shapes for t in traced):
        return None
    quoted = quote(failing.cell, line, "an array of the 2-D output's shape", sources)
    arrays = [(arg, a) for arg, a in zip(assignment.arg_names, batched.args)
              if isinstance(a, np.ndarray) and a.ndim > 2]
    if quoted is None or not arrays:
        return None
    arg, example = arrays[0]
    arg = student_names(assignment, sources).get(arg, arg)
    fixed = f"{name} = {module}.{_MADE_OF_SHAPE[function]}({arg})"
    error = outcome.message.strip().splitlines()[-1].rstrip(".")
    fix = (f"{line_words(quoted.cell, line).capitalize()} makes `{name}` a 2-D array whatever "
           f"the input's shape: on a batched input of shape {tuple(example.shape)} it is "
           f"still 2-D, and {line_words(failing.cell, failing.line)}, which writes one batch "
           f"of values into it, fails ({error}). Make it the input's shape: `{fixed}`.")
    return dataclasses.replace(quoted, fixed=fixed), fix


def _array_made_for(source: str, line: int) -> tuple[str, int, str, str] | None:
    """For a line that writes into ``name[...]``: the name, the line above it in the same
    function that made that array with ``np.zeros/empty/ones(shape)`` (or torch's), the
    function and its module; None if there is no such line."""
    tree = _parsed(source)
    if tree is None:
        return None
    stores = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)
              and node.lineno == line and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Subscript)
              and isinstance(node.targets[0].value, ast.Name)]
    if not stores:
        return None
    name = stores[0].targets[0].value.id  # type: ignore[attr-defined]
    made = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and node.lineno < line and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name]
    if not made:
        return None
    call = max(made, key=lambda node: node.lineno).value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name) and call.func.attr in _MADE_OF_SHAPE
            and call.func.value.id in ("np", "numpy", "torch")):
        return None
    return name, call.lineno, call.func.attr, call.func.value.id


def _unused(place: Place, sources: Sequence[str]) -> SourcePlace | None:
    """A line that computes a step's value that nothing uses (``masked_scores = ...`` beside
    the ``scores`` the code goes on with): quoted as such, and fixed by giving the value the
    name the rest of the code reads."""
    words = stage_words()[place.stage]
    quoted = quote(place.cell, place.line, words + UNUSED, sources)
    if quoted is not None:
        quoted = dataclasses.replace(quoted, unused=True)
    flowing = quote(*place.unused_for, words, sources) if place.unused_for else None
    if quoted is None or flowing is None:
        return quoted
    dead, used = _TARGET.match(quoted.code), _TARGET.match(flowing.code)
    if dead is None or used is None or dead["name"] == used["name"]:
        return quoted
    return dataclasses.replace(quoted, fixed=f"{used['name']} = {dead['rhs']}")


def _function_lines(cell: int | None, sources: Sequence[str]) -> list[SourcePlace]:
    """Every line inside a function of the quoted file or cell (the code that runs when it is
    called), quoted; a line outside functions runs only once, on loading."""
    tree = _parsed(sources[(cell or 1) - 1] if sources else "")
    if tree is None:
        return []
    inside = sorted({line for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     for child in node.body
                     for line in range(child.lineno, (child.end_lineno or child.lineno) + 1)})
    quoted = (quote(cell, line, "code that works on 2-D inputs only", sources) for line in inside)
    return [place for place in quoted if place is not None]


def stages_of(assignment: Assignment, recipe: Mapping[str, str], probe: Probe) -> dict[str, Array]:
    record: dict[str, Array] = {}
    try:
        with np.errstate(all="ignore"):
            assignment.task.pipeline(recipe, *probe.args, record=record)
    except (ValueError, IndexError, TypeError, ZeroDivisionError):
        return {}
    return record


def _first_place(assignment: Assignment, probe: Probe, traced: Sequence[TracedValue],
                 recipe: Mapping[str, str], without: Mapping[str, str],
                 allowed: Sequence[str], at_call: bool = False,
                 running: frozenset[tuple[int | None, int]] = frozenset()) -> Place | None:
    mistaken = stages_of(assignment, recipe, probe)
    correct = stages_of(assignment, without, probe)
    inputs = {f"the input {name}": np.asarray(a, dtype=np.float64)
              for name, a in zip(assignment.arg_names, probe.args) if isinstance(a, np.ndarray)}
    unused = _unused_value(traced, _whole(mistaken), _whole(correct), inputs)
    if unused is not None:
        return unused
    for stage in allowed:  # the row's order: where the mistake is best pointed at first
        value = mistaken.get(stage)
        if value is None or (stage in correct and _same(value, correct[stage])):
            continue
        # (running state is told from the right run's running state; a value of the whole
        # computation, from its other whole values: L = m is the lse's line, not the max's)
        running_state = isinstance(value, (TileStates, TileBlocks))
        correct_path = {**(correct if running_state else _whole(correct)), **inputs}
        right_forms = [form for other in correct_path.values() for form in _mask_forms(other)]
        # a skipped step (no scaling, no mask, no W_o) leaves a value the correct path has
        # too, at an earlier stage: the line that computes it is the one the step belongs after
        used = None if running_state else next(
            (name for name, other in correct_path.items() if _same(value, other)), None)
        # (a mask's other forms only where no form of a right value is the same array)
        others = _mask_forms(value)[1:] if used is None else ()
        hits = [(t.depth if used or at_call else 0, order, t) for order, t in enumerate(traced)
                if not t.changes_input and (running_state or (t.cell, t.line) not in running)
                and (
                    (_same(t.array, value)
                     and (used or not any(_same(t.array, o) for o in correct_path.values())))
                    or (any(_same(t.array, form) for form in others)
                        and not any(_same(t.array, o) for o in right_forms)))]
        if hits:  # made first (a mistake) or, for a skipped step, made by the outermost code
            best = min(hits, key=lambda hit: hit[:2])[2]
            return Place(best.cell, best.line, stage, used,
                         writers=_writers(traced, best, value, correct.get(stage)))
    return None


def _whole(stages: Mapping[str, Array]) -> dict[str, Array]:
    """The stages that are values of the whole computation (not running state)."""
    return {name: value for name, value in stages.items()
            if not isinstance(value, (TileStates, TileBlocks))}


def _mask_forms(value: Array) -> tuple[Array, ...]:
    """A stage's value and, for a mask (only 0 and 1), the same mask in its other forms: the
    blocked positions (1 - keep) and the additive bias (0 kept, -inf blocked). Code that builds
    the blocked part, or the bias, computes the same mistake in that form."""
    if not value.size or value.dtype.kind != "f" or not np.isin(value, (0.0, 1.0)).all():
        return (value,)
    return value, 1.0 - value, np.where(value > 0.5, 0.0, -np.inf)


def _writers(traced: Sequence[TracedValue], best: TracedValue, value: Array,
             right: Array | None) -> tuple[tuple[int | None, int], ...]:
    """The other lines that filled ``best``'s array in place with the mistaken values (where
    they differ from the right ones): code that writes a stage element by element or slice by
    slice writes the same mistake on each of those lines."""
    if right is None or right.shape != value.shape or best.array.shape != value.shape:
        return ()
    chain = [t for t in traced if t.chain == best.chain and t.array.shape == value.shape]
    wrong = ~np.isclose(value, right, rtol=1e-5, atol=1e-7)
    found: dict[tuple[int | None, int], None] = {}
    for before, after in zip(chain, chain[1:]):
        written = ~np.isclose(before.array, after.array, rtol=0, atol=0, equal_nan=True)
        mistaken = written & wrong & np.isclose(after.array, value, rtol=1e-5, atol=1e-7)
        if mistaken.any() and (after.cell, after.line) != (best.cell, best.line):
            found.setdefault((after.cell, after.line))
        if after is best:
            break
    return tuple(found)


def _unused_value(traced: Sequence[TracedValue], mistaken: Mapping[str, Array],
                  correct: Mapping[str, Array], inputs: Mapping[str, Array]) -> Place | None:
    """A line that computed the right value of a step the mistaken computation skips (it has
    no such step, or goes on with the value from before it), where the output shows the step
    skipped: the step was written, and its value never used. With the line whose value went
    on in its place, if one computed it. (A step the mistaken computation makes differently is
    not this: the right value may have gone into the wrong operation.)"""
    before = [*correct.values(), *inputs.values()]
    for stage, right in correct.items():
        wrong = mistaken.get(stage)
        if wrong is not None and (_same(wrong, right)
                                  or not any(_same(wrong, other) for other in before)):
            continue
        found = [t for t in traced if not t.changes_input and t.array.size > 1
                 and _same(t.array, right)
                 and not any(_same(t.array, o) for o in (*mistaken.values(), *inputs.values()))]
        if not found:
            continue
        dead = min(found, key=lambda t: t.depth)  # the outermost: where the value is left
        went_on = min((t for t in traced if not t.changes_input and wrong is not None
                       and _same(t.array, wrong)), key=lambda t: t.depth, default=None)
        return Place(dead.cell, dead.line, stage, unused=True,
                     unused_for=(went_on.cell, went_on.line) if went_on else None)
    return None


def same(computed: Array, stage: Array) -> bool:
    """Is ``computed`` the stage's value, one head's slice of it, or one row of it (code that
    loops over heads or rows, or has one module per head, computes them one at a time)? For
    running state (``TileStates``): its value after one key tile, or a query tile's rows of it."""
    if isinstance(stage, TileStates):
        if isinstance(computed, TileStates):  # two runs' whole state
            return computed.shape == stage.shape and _close(np.asarray(computed),
                                                            np.asarray(stage))
        return _one_tiles_state(computed, stage)
    if isinstance(stage, TileBlocks):
        return _one_block(computed, stage)
    return any(_close(computed, target) for target in _targets(stage, computed.shape))


def _one_tiles_state(computed: Array, stage: TileStates) -> bool:
    """Does ``computed`` hold the running state after one key tile: for every query row (the
    whole ``(..., n, f)``; or, code with key tiles outside that updates it query tile by query
    tile in place, the first query tiles' rows after key tile t and the rest after t - 1), or
    for one query tile's rows (query tiles outside: rows ``i0 .. i0 + r``, the tile starting
    at a multiple of its length r, or the last one ending at n)?"""
    states = np.asarray(stage)
    tiles, width, n = states.shape[0], states.shape[-1], states.shape[-2]
    lead = states.shape[1:-2]
    value = np.asarray(computed)
    if width == 1 and value.shape[-1:] != (1,):
        value = value[..., None]
    while value.ndim > len(lead) + 2 and value.shape[0] == 1:
        value = value[0]
    if value.ndim < 2 or value.shape[-1] != width or value.shape[-2] > n or value.size < 2:
        return False
    rows = value.shape[-2]
    if value.shape[:-2] == lead:  # every leading slice at once: all must agree
        states, value = states.reshape(tiles, 1, -1, n, width), value.reshape(1, 1, -1, rows, width)
    elif value.ndim == 2:  # one leading slice (a batch, a head) at a time: any may
        states, value = states.reshape(tiles, -1, 1, n, width), value.reshape(1, 1, 1, rows, width)
    else:
        return False
    starts = {n - rows, *range(0, n - rows + 1, rows)}
    for start in sorted(starts):
        window = states[..., start:start + rows, :]
        agree = np.asarray(_rows_close(value, window).all(axis=2))  # (tiles, alternatives, rows)
        if agree.all(axis=-1).any():
            return True
        if rows == n and tiles > 1 and _updated_in_place(agree):
            return True
    return False


def _one_block(computed: Array, stage: TileBlocks) -> bool:
    """Is ``computed`` one (query tile, key tile) block of the ``(..., n, m)`` stage: rows
    and columns starting at a multiple of the block's size, or the last ones (a remainder
    tile); for every leading slice at once, or for one of them?"""
    whole = np.asarray(stage)
    value = np.asarray(computed)
    while value.ndim > max(whole.ndim, 2) and value.shape[0] == 1:
        value = value[0]
    (n, m), (rows, cols) = whole.shape[-2:], value.shape[-2:] if value.ndim >= 2 else (0, 0)
    if value.ndim < 2 or value.size < 2 or rows > n or cols > m:
        return False
    if value.shape[:-2] == whole.shape[:-2]:
        wholes = [whole]
    elif value.ndim == 2:
        wholes = list(whole.reshape(-1, n, m))
    else:
        return False
    for i0 in sorted({n - rows, *range(0, n - rows + 1, rows)}):
        for j0 in sorted({m - cols, *range(0, m - cols + 1, cols)}):
            if any(_close(value, w[..., i0:i0 + rows, j0:j0 + cols]) for w in wholes):
                return True
    return False


def _rows_close(value: Array, states: Array) -> Array:
    """Row by row (the last axis compared whole), ``value`` against each of ``states``, as
    ``_close`` compares (blocked scores are -inf whatever their fill)."""
    value = np.where(value <= BLOCKED_BELOW, -np.inf, value)
    states = np.where(states <= BLOCKED_BELOW, -np.inf, states)
    finite = np.abs(states[np.isfinite(states)])
    scale = float(finite.max()) if finite.size else 1.0
    with np.errstate(invalid="ignore"):
        close = np.isclose(value, states, rtol=1e-5, atol=1e-7 * max(scale, 1.0),
                           equal_nan=True)
    return np.asarray(close.all(axis=-1))


def _updated_in_place(agree: Array) -> bool:
    """Rows 0 .. c - 1 agree with tile t's state and rows c .. n - 1 with tile t - 1's, for
    some tile t and row c, within one alternative (``agree``: (tiles, alternatives, rows))."""
    before = np.logical_and.accumulate(agree[1:], axis=-1)[..., :-1]
    after = np.logical_and.accumulate(agree[:-1][..., ::-1], axis=-1)[..., ::-1][..., 1:]
    return bool((before & after).any())


def _same(computed: Array, stage: Array) -> bool:
    """``same``, found once while one mistake is placed (see ``_SAME``)."""
    key = (id(computed), id(stage))
    known = _SAME.get(key)
    if known is not None and known[0] is computed and known[1] is stage:
        return known[2]
    found = same(computed, stage)
    if len(_SAME) >= _SAME_ENTRIES:
        _SAME.clear()
    _SAME[key] = (computed, stage, found)
    return found


#: what ``same`` found while one mistake is placed (``located``), with both arrays held, so
#: that neither identity is reused meanwhile: the same traced value is compared with the same
#: stage several times, to find the line, then the mistake's other lines
_SAME: dict[tuple[int, int], tuple[Array, Array, bool]] = {}
_SAME_ENTRIES = 4096


def _targets(stage: Array, shape: tuple[int, ...]) -> Iterator[Array]:
    size = math.prod(shape)
    if stage.shape == shape:
        yield stage
    elif stage.size == size and np.squeeze(stage).shape == tuple(d for d in shape if d != 1):
        yield stage.reshape(shape)
    elif len(shape) == 2 and stage.ndim >= 3 and stage.shape[-2:] == shape:
        yield from stage.reshape(-1, *shape)
    elif len(shape) == 1 and stage.ndim >= 2 and stage.shape[-1] == shape[0]:
        yield from stage.reshape(-1, shape[0])
    elif (len(shape) == stage.ndim + 1 and shape[:-2] == stage.shape[:-1]
          and shape[-2] * shape[-1] == stage.shape[-1]):
        # pairs stacked on a last axis, before the reshape that interleaves them
        yield stage.reshape(shape)
    elif len(shape) >= 3 and shape[0] == 1:
        # one head's slice (or row) under a leading axis of 1: code given one batch of
        # (1, n, d_model), as the GPT lecture's heads are, computes each head as (1, n, n)
        yield from (target.reshape(shape) for target in _targets(stage, shape[1:]))


def _close(a: Array, b: Array) -> bool:
    if a.shape != b.shape:
        return False
    if a.size:
        # (the hot path, as allclose below computes it for finite values, without its overhead:
        # a NaN makes the minimum NaN, which no comparison passes)
        low, high = float(b.min()), float(b.max())
        if (low > BLOCKED_BELOW and high < np.inf and a.min() > BLOCKED_BELOW
                and a.max() < np.inf):
            atol = 1e-7 * max(abs(low), abs(high), 1.0)
            return bool((np.abs(a - b) <= atol + 1e-5 * np.abs(b)).all())
    a = np.where(a <= BLOCKED_BELOW, -np.inf, a)
    b = np.where(b <= BLOCKED_BELOW, -np.inf, b)
    finite = np.abs(b[np.isfinite(b)])
    scale = float(finite.max()) if finite.size else 1.0
    return bool(np.allclose(a, b, rtol=1e-5, atol=1e-7 * max(scale, 1.0), equal_nan=True))


def quote(cell: int | None, line: int, computes: str, sources: Sequence[str]
          ) -> SourcePlace | None:
    """The submission's line as a report quotes it, read from the grader's own copy of the
    submission (a .py file is one source, a notebook one per cell); None if it is not there."""
    index = (cell - 1) if cell is not None else 0
    if not 0 <= index < len(sources):
        return None
    lines = sources[index].splitlines()
    if not 0 < line <= len(lines):
        return None
    text = lines[line - 1].strip()
    return SourcePlace(cell, line, text[:200], computes) if text else None


def with_literal_fix(quoted: SourcePlace, assignment: Assignment, misconception_id: str,
                     stage: str, sources: Sequence[str], alone: bool = True,
                     held: Mapping[str, str] | None = None) -> SourcePlace:
    """The quoted line with the code that undoes ``misconception_id`` on it, when one of the
    row's rewrites knows the line's shape (in SPEC's conventions only: a course's own conventions
    word the fix differently); ``held``: the code's names of running quantities
    (``held_names``)."""
    row = catalogue.BY_ID[misconception_id]
    own_terms = {key for key in assignment.interface.conventions() if key in row.in_conventions}
    if not row.rewrites or own_terms or len(quoted.code) >= 200 \
            or assignment.task.name in row.sentence_only_in:
        return quoted
    source = sources[(quoted.cell or 1) - 1] if sources else ""
    names = student_names(assignment, sources)
    context = edits.Context(assignment.task.softmax_alone, stage,
                            edits.dialect(quoted.code, source),
                            names, held or {})
    return dataclasses.replace(quoted, fixed=edits.rewrite(row.rewrites, quoted.code, context,
                                                           alone))


def student_names(assignment: Assignment, sources: Sequence[str]) -> dict[str, str]:
    """The submission's names of the canonical arguments ({"mask": "attn_mask", ...}), where it
    takes them as SPEC does (a course's interface has names of its own)."""
    if not assignment.interface.canonical_for(assignment.task.name):
        return {}
    return dict(zip(assignment.arg_names, parameter_names(sources, assignment.function)))


@functools.lru_cache(maxsize=8)  # a report reads one source several times: parsed once
def _parsed(source: str) -> ast.Module | None:
    """The submission's source parsed, or None when Python cannot parse it within the grader's
    memory (a crafted notebook)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def parameter_names(sources: Sequence[str], function: str) -> tuple[str, ...]:
    """The parameters of the submission's function ``function`` as it names them (the last
    definition wins, as when the code runs); () when it is not a plain function."""
    return _parameter_names(tuple(sources), function)


@functools.lru_cache(maxsize=16)  # asked once per line a report fixes
def _parameter_names(sources: tuple[str, ...], function: str) -> tuple[str, ...]:
    found: tuple[str, ...] = ()
    for source in sources:
        tree = _parsed(source)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == function:
                found = tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))
    return found
