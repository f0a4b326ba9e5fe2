"""Stage 4b (pure): which misconceptions explain the submission's outputs.

The student's outputs on every probe are matched against recipes of ``reference.variants``: the
reference first, then every single wrong choice, then pairs, then (within a time budget) triples.
The first level at which some recipe explains every comparable probe wins (fewest misconceptions).
A recipe explains the outputs when, on every probe where it runs, the student's output is within
tolerance of it (a call the recipe cannot make either, such as Q @ K with m != d_k, is neutral),
and somewhere the reference misses by at least ``compare.FAR`` tolerances: a variant is claimed
only when it explains the outputs far better than the reference. If nothing explains every probe,
a recipe that explains the 2-D probes but not the batched ones gives ``no-batch-support``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from grader.assignments import Assignment
from grader.compare import FAR, error_ratio, tolerance_for
from grader.model import Array, CallOutcome, Finding, Probe
from reference import catalogue

Recipe = Mapping[str, str]
REFERENCE: Recipe = {}
#: how long the triple search may take; pairs and singles are always searched in full
TRIPLE_BUDGET_SECONDS = 0.5
#: statuses that say nothing about the maths (the call could not be made or finish)
NOT_COMPARABLE = frozenset({"wrong-signature", "timeout"})


class _Matcher:
    """Caches every recipe's outputs on every probe, and compares them with the student's."""

    def __init__(self, assignment: Assignment, probes: Sequence[Probe],
                 outcomes: Sequence[CallOutcome]) -> None:
        self.assignment = assignment
        self.probes = probes
        self.outcomes = outcomes
        self.cache: dict[tuple[tuple[tuple[str, str], ...], int], Array | None] = {}

    def variant_output(self, recipe: Recipe, index: int) -> Array | None:
        key = (tuple(sorted(recipe.items())), index)
        if key not in self.cache:
            try:
                out, _ = self.assignment.variant(recipe, *self.probes[index].args)
                self.cache[key] = np.asarray(out, dtype=np.float64)
            except (ValueError, IndexError, TypeError, ZeroDivisionError):
                self.cache[key] = None
        return self.cache[key]

    def ratio(self, recipe: Recipe, index: int) -> float | None:
        """Student's error against ``recipe`` in tolerances; None if the recipe cannot run."""
        expected = self.variant_output(recipe, index)
        if expected is None:
            return None
        outcome = self.outcomes[index]
        if not outcome.ok:
            return float("inf")
        assert outcome.output is not None
        tol = tolerance_for(outcome.output, expected, "large" in self.probes[index].tags)
        return error_ratio(outcome.output, expected, tol)

    def explains(self, recipe: Recipe, indices: Sequence[int]) -> bool:
        ignored = catalogue.ignored_tags(self.assignment.id, recipe)
        matched = 0
        far_somewhere = not recipe
        for index in indices:
            if self.probes[index].tags & ignored:
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
    for level in range(1, max_level + 1):
        started = time.monotonic()
        for recipe in _recipes(matcher.assignment.id, level):
            if matcher.explains(recipe, indices):
                return recipe
            if level >= 3 and time.monotonic() - started > TRIPLE_BUDGET_SECONDS:
                break
    return None


def diagnose(assignment: Assignment, probes: Sequence[Probe],
             outcomes: Sequence[CallOutcome]) -> list[Finding]:
    """Name the misconceptions (if any) that explain the submission's outputs."""
    matcher = _Matcher(assignment, probes, outcomes)
    indices = comparable(probes, outcomes)
    findings: list[Finding] = []
    if any(outcomes[i].ok for i in indices) and not matcher.explains(REFERENCE, indices):
        recipe = _search(matcher, indices, 3)
        extra: tuple[str, ...] = ()
        if recipe is None:
            recipe = _batch_fallback(matcher, probes, indices)
            extra = ("no-batch-support",)
        if recipe is not None:
            for misconception_id in dict.fromkeys((*catalogue.ids_for(assignment.id, recipe),
                                                   *extra)):
                findings.append(Finding(misconception_id,
                                        _evidence(matcher, misconception_id, recipe, indices)))
    mutation = _mutation_evidence(assignment, probes, outcomes)
    if mutation:
        findings.append(Finding("mutates-input", mutation))
    return findings


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
    fails_batched = any((matcher.ratio(recipe, i) or 0.0) > 1.0 for i in batched)
    return recipe if fails_batched else None


# ------------------------------------------------------------------------------------ evidence


def probe_dims(assignment: str, probe: Probe) -> dict[str, object]:
    """The sizes of a probe, for the catalogue's fingerprint sentences."""
    args = probe.args
    if assignment == "softmax":
        x = args[0]
        return {"axis": args[1] if len(args) > 1 else -1, "big": "1e4", "n": x.shape[0],
                "m": x.shape[-1], "batched_shape": str(x.shape)}
    if assignment == "attention":
        q, k, v = args[:3]
        d_k, d_v, n, m = q.shape[-1], v.shape[-1], q.shape[-2], k.shape[-2]
        heads, d_model = 1, d_k
    else:
        q, k = args[0], args[1]
        d_model, heads = q.shape[-1], args[6]
        d_k = d_v = d_model // heads
        n, m = q.shape[-2], k.shape[-2]
    return {
        "d_k": d_k, "sqrt_dk": f"{np.sqrt(d_k):.4g}", "inv_sqrt_dk": f"{1 / np.sqrt(d_k):.4g}",
        "d_v": d_v, "sqrt_dv": f"{np.sqrt(d_v):.4g}", "n": n, "m": m,
        "d_model": d_model, "sqrt_dmodel": f"{np.sqrt(d_model):.4g}", "h": heads,
        "sqrt_h": f"{np.sqrt(heads):.4g}", "big": "1e4", "axis": -1,
        "batched_shape": str(tuple(q.shape)),
    }


def _projection_words(recipe: Recipe) -> str:
    choice = recipe.get("proj_matrices", "qkv")
    letters = {"q": "W_q", "k": "W_k", "v": "W_v", "-": "no matrix"}
    return ", ".join(f"{role} from {letters[c]}" for role, c in zip("QKV", choice))


def _evidence(matcher: _Matcher, misconception_id: str, recipe: Recipe,
              indices: Sequence[int]) -> str:
    assignment = matcher.assignment
    row = catalogue.BY_ID[misconception_id]
    telling = [
        i for i in indices
        if matcher.outcomes[i].ok and (matcher.ratio(REFERENCE, i) or 0.0) >= FAR
        and (matcher.ratio(recipe, i) or np.inf) <= 1.0
    ]
    if misconception_id == "no-batch-support":
        telling = [i for i in indices if matcher.probes[i].batched
                   and (matcher.ratio(recipe, i) or 0.0) > 1.0]
    if not telling:
        return row.fingerprint.split(";")[0]
    index = min(telling, key=lambda i: (matcher.probes[i].size, i))
    probe = matcher.probes[index]
    dims = {**probe_dims(assignment.id, probe), "projection": _projection_words(recipe),
            "input": "an input"}
    try:
        sentence = row.fingerprint.format(**dims)
    except (KeyError, IndexError, ValueError):
        sentence = row.fingerprint
    lines = [f"On probe '{probe.id}' {sentence}."]
    outcome = matcher.outcomes[index]
    correct, _ = assignment.reference(*probe.args)
    correct = np.asarray(correct, dtype=np.float64)
    variant = matcher.variant_output(recipe, index)
    if outcome.ok and variant is not None and correct.shape == variant.shape:
        with np.errstate(all="ignore"):
            gap = np.where(np.isfinite(correct - variant), np.abs(correct - variant), np.inf)
        at = np.unravel_index(int(np.argmax(gap)), gap.shape)
        assert outcome.output is not None
        got = outcome.output[at] if outcome.output.shape == correct.shape else None
        where = str(tuple(int(i) for i in at))
        lines.append(
            f"At index {where}: yours {_num(got)}, correct {_num(correct[at])}, "
            f"with this mistake {_num(variant[at])}."
        )
    elif outcome.ok and outcome.output is not None:
        lines.append(f"Your output has shape {tuple(outcome.output.shape)}; the correct one has "
                     f"shape {tuple(correct.shape)}.")
    lines.append("Reproduce it with:\n" + call_text(assignment, probe))
    return "\n".join(lines)


def _num(value: object) -> str:
    if value is None:
        return "(shape differs)"
    return f"{float(value):.6g}"  # type: ignore[arg-type]


MAX_CALL_CHARS = 12_000


def call_text(assignment: Assignment, probe: Probe) -> str:
    """The probe as Python the student can paste (arrays abbreviated when they are too long)."""
    names = assignment.arg_names
    lines = ["import numpy as np"]
    call_args = []
    seen: dict[int, str] = {}
    for name, value in zip(names, probe.args):
        if isinstance(value, np.ndarray):
            if id(value) in seen:
                call_args.append(seen[id(value)])
                continue
            seen[id(value)] = name
            text = np.array2string(value, separator=", ", threshold=10_000,
                                   max_line_width=100, floatmode="unique")
            lines.append(f"{name} = np.array({text})")
            call_args.append(name)
        else:
            call_args.append(repr(value))
    lines.append(f"{assignment.function}({', '.join(call_args)})")
    text = "\n".join(lines)
    if len(text) > MAX_CALL_CHARS:
        shapes = ", ".join(
            f"{n} {tuple(v.shape)}" if isinstance(v, np.ndarray) else f"{n}={v!r}"
            for n, v in zip(names, probe.args)
        )
        text = f"{assignment.function}({shapes})  # arrays too long to show here"
    return text


def first_mutated_input(arg_names: Sequence[str], probes: Sequence[Probe],
                        outcomes: Sequence[CallOutcome]) -> tuple[Probe, str] | None:
    """The first probe whose call changed an input array in place, and that input's name."""
    for probe, outcome in zip(probes, outcomes):
        if not outcome.ok:
            continue
        originals: list[tuple[str, Array]] = []
        seen: set[int] = set()
        for name, value in zip(arg_names, probe.args):
            if isinstance(value, np.ndarray) and id(value) not in seen:
                seen.add(id(value))
                originals.append((name, value))
        for (name, before), after in zip(originals, outcome.inputs_after):
            if before.shape != after.shape or not np.array_equal(before, after, equal_nan=True):
                return probe, name
    return None


def _mutation_evidence(assignment: Assignment, probes: Sequence[Probe],
                       outcomes: Sequence[CallOutcome]) -> str | None:
    mutated = first_mutated_input(assignment.arg_names, probes, outcomes)
    if mutated is None:
        return None
    probe, name = mutated
    return (f"After the call on probe '{probe.id}', {name} differs from what was passed in (the "
            f"caller's array was modified in place).\nReproduce it with:\n"
            f"{call_text(assignment, probe)}\nprint({name})")
