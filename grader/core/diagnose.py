"""Stage 4b (pure): which misconceptions explain the submission's outputs.

The student's outputs on every probe are matched against recipes of ``reference.variants``: the
reference first, then every single wrong choice, then pairs, then triples.
The first level at which some recipe explains every comparable probe wins (fewest misconceptions).
A recipe explains the outputs when, on every probe where it runs, the student's output is within
tolerance of it (a call the recipe cannot make either, such as Q @ K with m != d_k, is neutral),
and somewhere the reference misses by at least ``compare.FAR`` tolerances: a variant is claimed
only when it explains the outputs far better than the reference. If nothing explains every probe,
a recipe that explains the 2-D probes but not the batched ones gives ``no-batch-support``.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re
from collections.abc import Iterable, Sequence

import numpy as np

from grader.core.assignments import Assignment
from grader.core.compare import FAR, error_ratio, tolerance_for
from grader.core.evidence import REFERENCE, Recipe, explain, mutation_evidence
from grader.core.locate import (
    STAGE_WORDS,
    Place,
    also_places,
    locate,
    quote,
    student_names,
    with_literal_fix,
)
from grader.core.tasks import kept
from grader.model import Array, CallOutcome, Finding, Probe, SourcePlace
from reference import catalogue, edits

#: statuses that say nothing about the maths (the call could not be made or finish)
NOT_COMPARABLE = frozenset({"wrong-signature", "timeout"})
#: calls that raised or died: their own error in the report, neutral when naming what the
#: other probes show (a recipe is still claimed only where it explains every probe that ran)
CRASHES = frozenset({"runtime-error", "crashed", "memory-limit"})


def _variant_output(assignment: Assignment, recipe: Recipe, args: tuple[object, ...]) -> Array | None:
    def compute() -> Array | None:
        try:
            out, _ = assignment.variant(recipe, *args)
        except (ValueError, IndexError, TypeError, ZeroDivisionError):
            return None
        return np.array(out, dtype=np.float64)

    return kept(("recipe", assignment.task.name, *sorted(recipe.items())), args, compute)


class _Matcher:
    """Compares the student's outputs with every recipe's on every probe."""

    def __init__(self, assignment: Assignment, probes: Sequence[Probe],
                 outcomes: Sequence[CallOutcome]) -> None:
        self.assignment = assignment
        self.probes = probes
        self.outcomes = outcomes

    def variant_output(self, recipe: Recipe, index: int) -> Array | None:
        return _variant_output(self.assignment, recipe, self.probes[index].args)

    def ratio(self, recipe: Recipe, index: int) -> float | None:
        """Student's error against ``recipe`` in tolerances; None if the recipe cannot run."""
        expected = self.variant_output(recipe, index)
        if expected is None:
            return None
        outcome = self.outcomes[index]
        if not outcome.ok:
            return float("inf")
        assert outcome.output is not None
        actual = outcome.output
        unknown = self.assignment.task.unknown_rows
        rows = unknown(recipe, self.probes[index]) if unknown is not None else None
        if rows is not None and actual.shape == expected.shape and actual.ndim >= 2:
            if rows.all():
                return None
            actual, expected = actual[..., ~rows, :], expected[..., ~rows, :]
        tol = tolerance_for(actual, expected, "large" in self.probes[index].tags, judging=False)
        return error_ratio(actual, expected, tol)

    def explains(self, recipe: Recipe, indices: Sequence[int]) -> bool:
        ignored = catalogue.ignored_tags(self.assignment.task.name, recipe)
        matched = 0
        far_somewhere = not recipe
        for index in indices:
            if self.probes[index].tags & ignored or self.outcomes[index].error_kind in CRASHES:
                continue
            ratio = self.ratio(recipe, index)
            if ratio is None:
                continue
            if ratio > 1.0:
                return False
            matched += 1
            if not far_somewhere:
                reference_ratio = self.ratio(REFERENCE, index)
                far_somewhere = reference_ratio is None or reference_ratio >= FAR
        return matched >= (1 if not recipe else 2) and far_somewhere


def comparable(probes: Sequence[Probe], outcomes: Sequence[CallOutcome]) -> list[int]:
    """Probe indices usable for diagnosis, most telling first (2-D, then masked, then the rest)."""
    usable = [
        i for i, (p, o) in enumerate(zip(probes, outcomes))
        if "no-diagnosis" not in p.tags and o.error_kind not in NOT_COMPARABLE
    ]

    def order(i: int) -> tuple[int, int]:
        tags = probes[i].tags
        rank = 0 if not tags & {"batched", "coincidence", "large", "concept"} else 2
        rank += 1 if "masked" in tags else 0
        return rank, i

    return sorted(usable, key=order)


def _recipes(assignment: str, level: int) -> Iterable[Recipe]:
    deviations = catalogue.deviations(assignment)
    for combo in itertools.combinations(deviations, level):
        knobs = [knob for knob, _ in combo]
        if len(set(knobs)) == level:
            yield dict(combo)


def _search(matcher: _Matcher, indices: Sequence[int], max_level: int) -> Recipe | None:
    """The first recipe, fewest mistakes first, that explains the outputs. Searched in full at
    every level, so the answer never depends on the machine's speed (the longest, a wrong
    multi-head submission that no triple explains, takes about 1.5 s here)."""
    for level in range(1, max_level + 1):
        for recipe in _recipes(matcher.assignment.task.name, level):
            if matcher.explains(recipe, indices):
                return recipe
    return None


def diagnose(assignment: Assignment, probes: Sequence[Probe],
             outcomes: Sequence[CallOutcome], sources: Sequence[str] = ()) -> list[Finding]:
    """Name the misconceptions (if any) that explain the submission's outputs; with the
    submission's ``sources``, each finding also quotes the line where it enters, if found."""
    matcher = _Matcher(assignment, probes, outcomes)
    indices = comparable(probes, outcomes)
    findings: list[Finding] = []
    if any(outcomes[i].ok for i in indices):
        recipe = None if matcher.explains(REFERENCE, indices) else _search(matcher, indices, 3)
        extra: tuple[str, ...] = ()
        if recipe is None:  # nothing explains every probe, or the reference does where calls ran
            recipe = _batch_fallback(matcher, probes, indices)
            extra = (catalogue.detected_by("batch"),)
        elif _every_batched_call_failed(matcher, probes, indices):
            # the mistake found explains the 2-D calls, and no call with leading axes worked:
            # a second, separate gap (2-D-only code that also divides by d_k)
            extra = (catalogue.detected_by("batch"),)
        if recipe is not None:
            for misconception_id in dict.fromkeys((*catalogue.ids_for(assignment.task.name, recipe),
                                                   *extra)):
                finding = _located(Finding(
                    misconception_id, explain(matcher, misconception_id, recipe, indices),
                    _place(assignment, probes, outcomes, misconception_id, recipe, sources)))
                if finding.place is None and misconception_id in extra and sources:
                    finding = _where_batches_fail(assignment, probes, outcomes, finding, sources)
                findings.append(finding)
    mutation = mutation_evidence(assignment, probes, outcomes)
    if mutation:
        mutation_id = catalogue.detected_by("input-mutation")
        findings.append(Finding(mutation_id, mutation, _place(
            assignment, probes, outcomes, mutation_id, REFERENCE, sources)))
    if not findings:
        return findings
    whole = "\n".join(sources)
    names = tuple(student_names(assignment, sources).items())
    return [dataclasses.replace(f, dialect=edits.dialect(f.place.code if f.place else "", whole),
                                names=names)
            for f in findings]


#: what a quoted line computes when nothing uses it (``_unused``)
UNUSED = ", but nothing uses that value"


def _located(finding: Finding) -> Finding:
    """A finding whose line computes a value nothing uses is fixed by using it: said so."""
    place = finding.place
    if place is None or not place.computes.endswith(UNUSED):
        return finding
    where = f"code cell {place.cell}, line {place.line}" if place.cell else f"line {place.line}"
    fix = (f"{where.capitalize()} computes {place.computes.removesuffix(UNUSED)}, but the code "
           "goes on without that value: " + ("give it the name the rest of the code reads, "
                                             "as shown." if place.fixed else
                                             "use it from there on."))
    return dataclasses.replace(finding, fix=fix)


def _place(assignment: Assignment, probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
           misconception_id: str, recipe: Recipe, sources: Sequence[str]) -> SourcePlace | None:
    place = locate(assignment, probes, outcomes, misconception_id, recipe) if sources else None
    if place is None:
        return None
    if place.unused:
        return _unused(place, sources)
    computes = STAGE_WORDS[place.stage]
    if place.used is not None:
        computes = f"{STAGE_WORDS.get(place.used, place.used)}, used as {computes}"
    quoted = quote(place.cell, place.line, computes, sources)
    if quoted is None:
        return None
    first = with_literal_fix(quoted, assignment, misconception_id, place.stage, sources,
                             alone=False)
    if first.fixed is None:
        return first
    others = []
    for other in also_places(assignment, probes, outcomes, misconception_id, recipe, place):
        line = quote(other.cell, other.line, STAGE_WORDS[other.stage], sources)
        if line is not None:
            line = with_literal_fix(line, assignment, misconception_id, other.stage, sources,
                                    alone=False)
            if line.fixed is not None:
                others.append(line)
    if not others:  # the first line's fix must then do the whole job by itself
        return with_literal_fix(quoted, assignment, misconception_id, place.stage, sources)
    return dataclasses.replace(first, also=tuple(others))


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
        quoted = with_literal_fix(quoted, assignment, finding.id, "batch", sources)
        if quoted.fixed is not None:
            also = [with_literal_fix(other, assignment, finding.id, "batch", sources)
                    for other in _function_lines(quoted.cell, sources)
                    if other.line != quoted.line]
            quoted = dataclasses.replace(quoted, also=tuple(o for o in also if o.fixed))
        context = edits.Context(assignment.task.name, "batch",
                                edits.dialect(quoted.code, "\n".join(sources)))
        reasons = edits.two_d_only(quoted.code, context)
        where = f"code cell {quoted.cell}, line {quoted.line}" if quoted.cell else \
            f"line {quoted.line}"
        error = outcome.message.strip().splitlines()[-1].rstrip(".")
        fix = (f"{where.capitalize()} works on 2-D inputs only: " + "; ".join(reasons) + "."
               if reasons else
               f"{where.capitalize()} fails on inputs with leading batch dimensions ({error}): "
               "write it with operations that act on the last two axes, whatever comes "
               "before them.")
        return dataclasses.replace(finding, place=quoted, fix=fix)
    return finding


_TARGET = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<rhs>[^=].*)$")


def _unused(place: Place, sources: Sequence[str]) -> SourcePlace | None:
    """A line that computes a step's value that nothing uses (``masked_scores = ...`` beside
    the ``scores`` the code goes on with): quoted as such, and fixed by giving the value the
    name the rest of the code reads."""
    words = STAGE_WORDS[place.stage]
    quoted = quote(place.cell, place.line, words + UNUSED, sources)
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
    source = sources[(cell or 1) - 1] if sources else ""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    inside = sorted({line for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     for child in node.body
                     for line in range(child.lineno, (child.end_lineno or child.lineno) + 1)})
    quoted = (quote(cell, line, "code that works on 2-D inputs only", sources) for line in inside)
    return [place for place in quoted if place is not None]


def _every_batched_call_failed(matcher: _Matcher, probes: Sequence[Probe],
                               indices: Sequence[int]) -> bool:
    """Did every batched call fail (raise, die or return a wrong shape) where the 2-D calls of
    the same kind (masked or not) worked?"""
    unbatched = [i for i in indices if not probes[i].batched]
    ran = {"masked" in probes[i].tags for i in unbatched if matcher.outcomes[i].ok}
    batched = [i for i in indices if probes[i].batched and ("masked" in probes[i].tags) in ran]
    return bool(batched) and all(
        matcher.outcomes[i].error_kind in CRASHES | {"wrong-shape"} for i in batched)


def _batch_fallback(matcher: _Matcher, probes: Sequence[Probe],
                    indices: Sequence[int]) -> Recipe | None:
    unbatched = [i for i in indices if not probes[i].batched]
    batched = [i for i in indices if probes[i].batched]
    if not batched or not any(matcher.outcomes[i].ok for i in unbatched):
        return None
    if matcher.explains(REFERENCE, unbatched):
        recipe: Recipe | None = REFERENCE
    else:
        recipe = _search(matcher, unbatched, 2)
    if recipe is None:
        return None
    # a batched probe counts against batching only where the same kind of 2-D probe (masked or
    # not) ran: code that fails on every masked probe has a masking problem, not a batch one
    ran = {"masked" in probes[i].tags for i in unbatched if matcher.outcomes[i].ok}
    fails_batched = any(
        ("masked" in probes[i].tags) in ran
        and (matcher.outcomes[i].error_kind in CRASHES or (matcher.ratio(recipe, i) or 0.0) > 1.0)
        for i in batched)
    return recipe if fails_batched else None
