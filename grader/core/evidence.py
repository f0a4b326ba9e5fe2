"""Evidence for the findings (pure): on the smallest probe that shows a mistake, the sentence
from the catalogue row, the numbers that tell it apart, and the call to paste to see it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from grader.core.assignments import Assignment
from grader.core.compare import FAR, gap
from grader.core.probes import DIAGNOSIS_ONLY
from grader.model import DEFAULT_SEED, Array, CallOutcome, Probe
from reference import catalogue

Recipe = Mapping[str, str]
#: the recipe without any wrong choice: the reference itself
REFERENCE: Recipe = {}


class Matcher(Protocol):
    """What the evidence needs from diagnosis: the run and each recipe's error on each probe."""

    assignment: Assignment
    probes: Sequence[Probe]
    outcomes: Sequence[CallOutcome]

    def ratio(self, recipe: Recipe, index: int) -> float | None: ...

    def variant_output(self, recipe: Recipe, index: int, name: str = "") -> Array | None: ...



def explain(matcher: Matcher, misconception_id: str, recipe: Recipe,
            indices: Sequence[int]) -> str:
    """The evidence of one finding: a sentence, the numbers that tell it apart, and a call to
    paste, on the smallest probe where the mistake shows."""
    assignment = matcher.assignment
    row = catalogue.BY_ID[misconception_id]
    telling = [
        i for i in indices
        if matcher.outcomes[i].ok and (matcher.ratio(REFERENCE, i) or 0.0) >= FAR
        and _within(matcher.ratio(recipe, i))
    ]
    if row.detector == "batch":
        telling = [i for i in indices if matcher.probes[i].batched
                   and (matcher.ratio(recipe, i) or 0.0) > 1.0]
    if not telling:  # the pattern shows only across probes: say it, with real sizes
        shown = min(indices, key=lambda i: _shown_first(matcher, i)) if indices else None
        return (_sentence(row, assignment, matcher.probes[shown], recipe) + "."
                if shown is not None else row.title + ".")
    own = catalogue.own_choices(misconception_id, recipe)
    one_of_several = 0 < len(own) < len(recipe)
    task = assignment.task.name
    if len(catalogue.ids_for(task, own)) > 1:  # one choice that is several mistakes at once:
        # shown where this mistake alone (its own single variant) changes the answer
        single = next(({v.knob: v.choice} for v in row.variants if task in v.tasks
                       and catalogue.ids_for(task, {v.knob: v.choice}) == (row.id,)), None)
        if single is not None:
            telling = [i for i in telling if _changes_answer(matcher, single, i)] or telling
    if one_of_several:  # show it where this mistake alone changes the answer
        telling = [i for i in telling if _changes_answer(matcher, own, i)] or telling
    index = min(telling, key=lambda i: _shown_first(matcher, i))
    probe = matcher.probes[index]
    lines = [f"On test input '{probe.id}' {_sentence(row, assignment, probe, recipe)}."]
    outcome = matcher.outcomes[index]
    name = _shown_output(matcher, own if one_of_several else recipe, index)
    correct = _correct(matcher, index, name)
    variant = matcher.variant_output(recipe, index, name)
    if outcome.ok and variant is not None and correct.shape == variant.shape:
        alone = matcher.variant_output(own, index, name) if one_of_several else None
        if alone is not None and alone.shape != correct.shape:
            alone = None
        # several mistakes: the index where this one alone departs most from the answer
        gaps = _known(matcher, recipe, index, name, correct,
                      gap(variant if alone is None else alone, correct))
        returned = outcome.returned(name)
        if returned is not None and returned.shape == correct.shape:
            # never an index where yours is right ("yours 1, correct 1"), where another index
            # shows the mistake
            wrong = gap(np.asarray(returned, dtype=np.float64), correct) > 1e-6 * (
                1.0 + np.abs(np.nan_to_num(correct)))
            if np.any(wrong & (gaps > 0)):
                gaps = np.where(wrong, gaps, -1.0)
        at = np.unravel_index(int(np.argmax(gaps)), gaps.shape)
        got = returned[at] if returned is not None and returned.shape == correct.shape else None
        where = str(tuple(int(i) for i in at))
        # (a task whose mistakes show in several outputs says which one the numbers are of)
        at_words = f"In {name} at index" if len(assignment.diagnosed_outputs) > 1 else "At index"
        if alone is not None:
            # several mistakes at once: what this one alone would give, then all of them (and
            # where they cancel, so that yours is right there, not "yours 1, correct 1")
            yours = ("" if got is not None and _num(got) == _num(correct[at])
                     else f"yours {_num(got)}, ")
            lines.append(
                f"{at_words} {where}: {yours}correct {_num(correct[at])}, with this "
                f"mistake alone {_num(alone[at])}, with {_all(assignment, recipe)} of your mistakes "
                f"{_num(variant[at])}.")
        else:
            lines.append(
                f"{at_words} {where}: yours {_num(got)}, correct {_num(correct[at])}, "
                f"with this mistake {_num(variant[at])}."
            )
        if assignment.task.read_as:
            lines[-1] = f"{lines[-1][:-1]} ({assignment.task.read_as})."
    elif outcome.ok and outcome.output is not None:
        lines.append(f"Your output has shape {tuple(outcome.output.shape)}; the correct one has "
                     f"shape {tuple(correct.shape)}.")
    lines.append("Reproduce it with:\n" + call_text(assignment, probe))
    return "\n".join(lines)


def _known(matcher: Matcher, recipe: Recipe, index: int, name: str, correct: Array,
           gaps: Array) -> Array:
    """``gaps`` with the rows diagnosis does not compare for this recipe set to 0 (a row the
    broken mask leaves without any key computes whatever its fill value gives: the mistake is
    shown on the other rows), unless the mistake shows on no other row (there the undefined
    rows are its symptom)."""
    task = matcher.assignment.task
    rows = matcher.assignment.unknown_rows(recipe, matcher.probes[index])
    per_row = name in task.row_outputs
    if rows is None or not rows.any() or rows.all() or gaps.ndim < 2 - per_row:
        return gaps
    kept = gaps.copy()
    if per_row:
        kept[..., rows] = 0.0
    else:
        kept[..., rows, :] = 0.0
    scale = 1.0 + float(np.nanmax(np.abs(correct), initial=0.0))
    return kept if kept.max(initial=0.0) > 1e-6 * scale else gaps


def _shown_first(matcher: Matcher, index: int) -> tuple[bool, bool, int, int]:
    """Which probe a finding is shown on: a scored one (the student sees it in the checks), one
    of ordinary values (not built to overflow), the smallest, the first."""
    probe = matcher.probes[index]
    return DIAGNOSIS_ONLY in probe.tags, "large" in probe.tags, probe.size, index


def _correct(matcher: Matcher, index: int, name: str = "") -> Array:
    """The reference's output of that name (the first diagnosed one by default)."""
    assignment = matcher.assignment
    outputs = dict(zip(assignment.outputs, assignment.reference(*matcher.probes[index].args)))
    return np.asarray(outputs[name or assignment.diagnosed_outputs[0]], dtype=np.float64)


def _departure(matcher: Matcher, recipe: Recipe, index: int, name: str) -> float:
    """How far ``recipe`` moves this output from the answer, relative to its size (0 when it
    cannot run, or gives another shape)."""
    correct, variant = _correct(matcher, index, name), matcher.variant_output(recipe, index, name)
    if variant is None or variant.shape != correct.shape:
        return 0.0
    scale = 1.0 + float(np.nanmax(np.abs(correct), initial=0.0))
    return float(gap(variant, correct).max(initial=0.0)) / scale


def _changes_answer(matcher: Matcher, recipe: Recipe, index: int) -> bool:
    """Does ``recipe`` change the answer on this probe beyond rounding (in any output
    diagnosis compares)?"""
    return any(_departure(matcher, recipe, index, name) > 1e-6
               for name in matcher.assignment.diagnosed_outputs)


def _shown_output(matcher: Matcher, recipe: Recipe, index: int) -> str:
    """The output whose numbers show the mistake: the one it moves furthest from the answer
    (the first, where diagnosis compares one)."""
    names = matcher.assignment.diagnosed_outputs
    if len(names) == 1:
        return names[0]
    return max(names, key=lambda name: _departure(matcher, recipe, index, name))


def _all(assignment: Assignment, recipe: Recipe) -> str:
    """How many mistakes the report names for ``recipe`` (one may take several choices)."""
    named = max(2, len(catalogue.ids_for(assignment.task.name, recipe)))
    return "both" if named == 2 else f"all {named}"


def _within(ratio: float | None) -> bool:
    """Does the recipe reproduce the output (an exact match is a ratio of 0, not a miss)?"""
    return ratio is not None and ratio <= 1.0


def _sentence(row: catalogue.Misconception, assignment: Assignment, probe: Probe,
              recipe: Recipe) -> str:
    """The row's evidence sentence with this probe's sizes (never a template's braces)."""
    fields = {**assignment.task.evidence_fields(probe, recipe), "input": "an input"}
    conventions = assignment.wording_terms()
    try:
        return catalogue.wording(row.id, conventions).fingerprint.format(**fields)
    except (KeyError, IndexError, ValueError):
        return row.title[0].lower() + row.title[1:]


def _num(value: object) -> str:
    if value is None:
        return "(shape differs)"
    return f"{float(value):.6g}"  # type: ignore[arg-type]


MAX_CALL_CHARS = 12_000
#: past this many numbers a public test input is fetched by name, not pasted (a pasted 4 x 3
#: matrix is five lines of the report; the name is one)
MAX_PASTED_NUMBERS = 12


#: the text of each test input written out, kept with its (read-only) array: a batch writes
#: the same few inputs into the reports of hundreds of students, and NumPy's printing is slow
_PASTEABLE: dict[int, tuple[np.ndarray, str]] = {}


def _pasteable(value: np.ndarray) -> str:
    known = _PASTEABLE.get(id(value))
    if known is not None and known[0] is value and not value.flags.writeable:
        return known[1]
    text = np.array2string(value, separator=", ", threshold=10_000, max_line_width=100,
                           floatmode="unique")
    if not value.flags.writeable:  # (a probe's input, made once; anything else is not kept)
        if len(_PASTEABLE) >= 256:
            _PASTEABLE.clear()
        _PASTEABLE[id(value)] = (value, text)
    return text


def _inputs_of(assignment: Assignment) -> str:
    """What names the test inputs for ``probe_inputs``: the task, or the assignment itself
    where its interface adapts them (fixed tile sizes, one width)."""
    if not assignment.adapts_probes:
        return assignment.task.name
    from grader import registry

    return registry.reference_of(assignment.info)


def call_text(assignment: Assignment, probe: Probe) -> str:
    """The probe as Python the student can paste: small arrays written out; a larger public
    test input fetched by name with ``grader.probe_inputs``. A hidden test input is named with
    its shapes (``hidden_call``): its arrays would double the report, and fetching it by name
    would need the secret seed."""
    names = assignment.arg_names
    if probe.meta.get("seed", DEFAULT_SEED) != DEFAULT_SEED:
        return hidden_call(assignment, probe)
    used = {id(v): n for n, v in reversed(list(zip(names, probe.args)))}
    numbers = sum(v.size for v in probe.args if isinstance(v, np.ndarray))
    call = _call_line(assignment)
    if numbers > MAX_PASTED_NUMBERS and probe.meta.get("seed") == DEFAULT_SEED:
        call_args = [used[id(v)] if isinstance(v, np.ndarray) else repr(v) for v in probe.args]
        imports = "probe_inputs, reproduce" if assignment.through_interface else "probe_inputs"
        return (f"from grader import {imports}\n"
                f"{', '.join(names[:len(probe.args)])} = "
                f"probe_inputs({_inputs_of(assignment)!r}, {probe.id!r})\n"
                f"{call(call_args)}")
    lines = ["import numpy as np"] + (["from grader import reproduce"]
                                      if assignment.through_interface else [])
    call_args = []
    seen: dict[int, str] = {}
    for name, value in zip(names, probe.args):
        if isinstance(value, np.ndarray):
            if id(value) in seen:
                call_args.append(seen[id(value)])
                continue
            seen[id(value)] = name
            lines.append(f"{name} = np.array({_pasteable(value)})")
            call_args.append(name)
        else:
            call_args.append(repr(value))
    lines.append(call(call_args))
    text = "\n".join(lines)
    if len(text) > MAX_CALL_CHARS:
        shapes = ", ".join(
            f"{n} {tuple(v.shape)}" if isinstance(v, np.ndarray) else f"{n}={v!r}"
            for n, v in zip(names, probe.args)
        )
        text = f"{assignment.function}({shapes})  # arrays too long to show here"
    return text


def hidden_call(assignment: Assignment, probe: Probe) -> str:
    """A call on a hidden test input, told by the input's name and its arguments' shapes."""
    shapes = ", ".join(
        f"{n} {tuple(v.shape)}" if isinstance(v, np.ndarray) else f"{n}={v!r}"
        for n, v in zip(assignment.arg_names, probe.args))
    return (f"{assignment.function}({shapes})  # hidden test input '{probe.id}': your "
            f"self-check shows the same mistake on a call you can paste")


def _call_line(assignment: Assignment) -> Callable[[list[str]], str]:
    """How the reproducing call is written: SPEC's function called directly, or a course's
    code through ``grader.reproduce``, which hands it the grader's arrays as the course's
    interface does (its order, mask convention, weight layout, array type)."""
    if not assignment.through_interface:
        return lambda args: f"{assignment.function}({', '.join(args)})"
    info = assignment.info
    reference = str(info.folder) if info.kind == "course" else info.id
    return lambda args: (f"reproduce({assignment.function}, {', '.join(args)}, "
                         f"assignment={reference!r})  # your code, called as your course's "
                         f"interface says")


def first_mutated_input(arg_names: Sequence[str], probes: Sequence[Probe],
                        outcomes: Sequence[CallOutcome]) -> tuple[Probe, str] | None:
    """The first probe whose call changed an input array in place, and that input's name."""
    for probe, outcome in zip(probes, outcomes):
        if not outcome.ok:
            continue
        originals = [(arg_names[position], value) for position, value in probe.input_arrays()
                     if position < len(arg_names)]
        for (name, before), after in zip(originals, outcome.inputs_after):
            if (before.shape, before.dtype) == (after.shape, after.dtype) and \
                    before.tobytes() == after.tobytes():
                continue  # (the usual case, told quickly: the very same bytes came back)
            if before.shape != after.shape or not np.array_equal(before, after, equal_nan=True):
                return probe, name
    return None


def mutation_evidence(assignment: Assignment, probes: Sequence[Probe],
                       outcomes: Sequence[CallOutcome]) -> str | None:
    mutated = first_mutated_input(assignment.arg_names, probes, outcomes)
    if mutated is None:
        return None
    probe, name = mutated
    return (f"After the call on test input '{probe.id}', {name} differs from what was passed in (the "
            f"caller's array was modified in place).\nReproduce it with:\n"
            f"{call_text(assignment, probe)}\nprint({name})")
