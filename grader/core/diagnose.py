"""Stage 4b (pure): which misconceptions explain the submission's outputs.

The student's outputs on every probe are matched against recipes of the task's pipeline (``reference.tasks``): the
reference first, then every single wrong choice, then pairs, then triples.
The first level at which some recipe explains every comparable probe wins (fewest misconceptions).
A recipe explains the outputs when, on every probe where it runs, the student's output is within
tolerance of it (a call the recipe cannot make either, such as Q @ K with m != d_k, is neutral),
and somewhere the reference misses by at least ``compare.FAR`` tolerances: a variant is claimed
only when it explains the outputs far better than the reference. If nothing explains every probe,
a recipe that explains the 2-D probes but not the batched ones gives ``no-batch-support``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np

from grader.core.assignments import Assignment
from grader.core.compare import FAR, error_ratio, tolerance_for
from grader.core.evidence import REFERENCE, Recipe, explain, mutation_evidence
from grader.core.locate import in_the_submissions_words, located
from grader.core.tasks import kept
from grader.model import Array, CallOutcome, Finding, Probe
from reference import catalogue

#: statuses that say nothing about the maths (the call could not be made or finish)
NOT_COMPARABLE = frozenset({"wrong-signature", "timeout"})
#: calls that raised or died: their own error in the report, neutral when naming what the
#: other probes show (a recipe is still claimed only where it explains every probe that ran)
CRASHES = frozenset({"runtime-error", "crashed", "memory-limit"})


def _variant_outputs(assignment: Assignment, recipe: Recipe, args: tuple[object, ...]
                     ) -> dict[str, Array] | None:
    """The outputs diagnosis compares (``Task.diagnosed``), as the recipe computes them; None
    when the recipe cannot run on these inputs. A float32 course's code computes in float32
    (where exp overflows above about 88, not 709): the recipe does too."""
    single = assignment.interface.dtype == "float32"

    def compute() -> dict[str, Array] | None:
        given = tuple(a.astype(np.float32) if single and isinstance(a, np.ndarray)
                      and a.dtype == np.float64 else a for a in args)
        try:
            outputs = assignment.variant(recipe, *given)
        except (ValueError, IndexError, TypeError, ZeroDivisionError):
            return None
        named = dict(zip(assignment.outputs, outputs))
        return {name: np.array(named[name], dtype=np.float64)
                for name in assignment.diagnosed_outputs}

    return kept(("recipe", assignment.task.name, single, *sorted(recipe.items())), args,
                compute)


class _Matcher:
    """Compares the student's outputs with every recipe's on every probe."""

    def __init__(self, assignment: Assignment, probes: Sequence[Probe],
                 outcomes: Sequence[CallOutcome]) -> None:
        self.assignment = assignment
        self.probes = probes
        self.outcomes = outcomes
        #: ratios worked out so far (the search asks again for the reference's, and evidence
        #: and location for the chosen recipe's)
        self._ratios: dict[tuple[object, ...], float | None] = {}

    def variant_outputs(self, recipe: Recipe, index: int) -> dict[str, Array] | None:
        return _variant_outputs(self.assignment, recipe, self.probes[index].args)

    def variant_output(self, recipe: Recipe, index: int, name: str = "") -> Array | None:
        """One output the recipe computes (the first diagnosed one by default)."""
        outputs = self.variant_outputs(recipe, index)
        if outputs is None:
            return None
        return outputs[name or self.assignment.diagnosed_outputs[0]]

    def ratio(self, recipe: Recipe, index: int) -> float | None:
        """Student's error against ``recipe`` in tolerances; None if the recipe cannot run."""
        key = (*sorted(recipe.items()), index)
        if key not in self._ratios:
            self._ratios[key] = self._ratio(recipe, index)
        return self._ratios[key]

    def _ratio(self, recipe: Recipe, index: int) -> float | None:
        """The worst of the diagnosed outputs' errors against the recipe's, in tolerances. For
        a recipe other than the reference only whether it is above 1 is ever asked, so the
        first output above 1 is the answer (the others are not compared)."""
        expected_outputs = self.variant_outputs(recipe, index)
        if expected_outputs is None:
            return None
        outcome = self.outcomes[index]
        if not outcome.ok:
            return float("inf")
        worst: float | None = None
        for name, expected in expected_outputs.items():
            actual = outcome.returned(name)
            if actual is None:  # an optional output the submission does not return
                continue
            ratio = self._output_ratio(recipe, index, actual, expected, name)
            if ratio is not None:
                worst = ratio if worst is None else max(worst, ratio)
                if recipe and worst > 1.0:
                    break
        return worst

    def _output_ratio(self, recipe: Recipe, index: int, actual: Array,
                      expected: Array, name: str = "") -> float | None:
        task = self.assignment.task
        rows = self.assignment.unknown_rows(recipe, self.probes[index])
        per_row = name in task.row_outputs  # (..., n): the rows are the last axis
        if rows is not None and actual.shape == expected.shape and actual.ndim >= 2 - per_row:
            if rows.all():
                return None
            if per_row:
                actual, expected = actual[..., ~rows], expected[..., ~rows]
            else:
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
        elif _every_batched_call_failed(matcher, probes, indices, recipe):
            # the mistake found explains the 2-D calls, and no call with leading axes worked:
            # a second, separate gap (2-D-only code that also divides by d_k)
            extra = (catalogue.detected_by("batch"),)
        if recipe is not None:
            for misconception_id in dict.fromkeys((*catalogue.ids_for(assignment.task.name, recipe),
                                                   *extra)):
                findings.append(located(
                    Finding(misconception_id, explain(matcher, misconception_id, recipe, indices)),
                    assignment, probes, outcomes, recipe, sources,
                    from_failed_calls=misconception_id in extra))
    mutation = mutation_evidence(assignment, probes, outcomes)
    if mutation:
        mutation_id = catalogue.detected_by("input-mutation")
        findings.append(located(Finding(mutation_id, mutation), assignment, probes, outcomes,
                                REFERENCE, sources))
    return in_the_submissions_words(findings, assignment, sources)


def _every_batched_call_failed(matcher: _Matcher, probes: Sequence[Probe],
                               indices: Sequence[int], recipe: Recipe) -> bool:
    """Did every batched call fail (raise, die or return a wrong shape) where the 2-D calls of
    the same kind (masked or not) worked? Only the batched calls the mistake found can make
    count: one that runs only on some shapes (P dO needs n = m) fails on the others as its
    symptom, not as a second gap."""
    unbatched = [i for i in indices if not probes[i].batched]
    ran = {"masked" in probes[i].tags for i in unbatched if matcher.outcomes[i].ok}
    batched = [i for i in indices if probes[i].batched and ("masked" in probes[i].tags) in ran
               and matcher.variant_outputs(recipe, i) is not None]
    failed_2d = _failures(matcher.outcomes, unbatched)
    return bool(batched) and all(
        matcher.outcomes[i].error_kind in CRASHES | {"wrong-shape"}
        and _failure(matcher.outcomes[i]) not in failed_2d for i in batched)


def _failure(outcome: CallOutcome) -> tuple[str, str] | None:
    """Where and how a call raised: its last traceback line into the submission's code and
    the exception's type (None for a call that did not raise)."""
    if outcome.error_kind != "runtime-error":
        return None
    lines = outcome.message.strip().splitlines()
    frames = [line for line in lines if line.startswith('  File "')]
    return (frames[-1] if frames else "", lines[-1].split(":")[0] if lines else "")


def _failures(outcomes: Sequence[CallOutcome], indices: Sequence[int]) -> set[tuple[str, str]]:
    """How the calls ``indices`` raised: a batched call that fails the same way as a 2-D one
    shows a mistake of the 2-D code, not of its batching."""
    return {f for f in (_failure(outcomes[i]) for i in indices) if f is not None}


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
    failed_2d = _failures(matcher.outcomes, unbatched)
    fails_batched = any(
        ("masked" in probes[i].tags) in ran
        and (matcher.outcomes[i].error_kind in CRASHES or (matcher.ratio(recipe, i) or 0.0) > 1.0)
        and (_failure(matcher.outcomes[i]) is None
             or _failure(matcher.outcomes[i]) not in failed_2d)
        for i in batched)
    return recipe if fails_batched else None
