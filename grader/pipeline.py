"""The pipeline, top to bottom: load -> run isolated -> probe -> diagnose and score -> report."""

from __future__ import annotations

import dataclasses
import difflib
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import load, registry, sandbox
from grader.config import DEFAULT_LIMITS, Limits
from grader.model import (
    DEFAULT_SEED,
    GraderError,
    Probe,
    RunInfo,
    printable_name,
)
from grader.sandbox.session import CallPlan
from grader.version import __version__

if TYPE_CHECKING:
    from grader.core.assignments import Assignment
    from grader.core.tiling import Measurement
    from grader.model import CallOutcome



def import_numeric_stages() -> None:
    """NumPy and the numeric stages, in the grader's own process; called while the child starts
    (see ``sandbox.run``)."""
    import grader.core.assignments
    import grader.core.diagnose
    import grader.core.report
    import grader.core.scoring  # noqa: F401

    _one_blas_thread()


def warm_up(assignment: str, seed: int) -> None:
    """What grading any submission of ``assignment`` first works out, worked out now: the
    numeric stages, the assignment, its probes and the reference's answers to them (a batch's
    parent does this once, while the fork server starts, for all the workers it forks)."""
    import_numeric_stages()
    import grader.core.divergence  # noqa: F401
    from grader.core.assignments import get
    from grader.core.report import schema

    info = registry.get(assignment)
    parts = ([registry.reference_of(found) for found, _ in registry.parts_of(info)]
             if info.multi_part else [assignment])
    for part in parts:  # (each part of an assignment made of parts)
        spec = get(part)
        for probe in spec.probes(seed):
            spec.reference_on(probe)
    schema()


#: what OpenBLAS builds call the function that sets their thread count
_BLAS_THREAD_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                        "openblas_set_num_threads64_")


_blas_threads_set = False


def _one_blas_thread() -> None:
    """Have the OpenBLAS that NumPy loaded use one thread in this process: the grader's arrays
    are small, its idle threads spin after each product, taking CPU from the students' runs, and
    the reference's last bits then do not depend on the machine's cores (what threadpoolctl
    does; nothing happens where the library or the function is missing). Once per process
    (a forked one keeps it)."""
    import ctypes

    global _blas_threads_set
    if _blas_threads_set:
        return
    _blas_threads_set = True
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _BLAS_THREAD_SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter(1)
                break


def infer_assignment(names: Sequence[str]) -> str | None:
    """The most advanced assignment whose function the submission defines."""
    return registry.infer(names)


def missing_function_message(wanted: Sequence[str], defined: Sequence[str]) -> str:
    """Say which function is missing and which defined name it may have been meant to be."""
    public = [n for n in defined if not n.startswith("_")]
    best: tuple[float, str, str] | None = None
    for name in wanted:
        for candidate in difflib.get_close_matches(name, public, n=1, cutoff=0.5):
            ratio = difflib.SequenceMatcher(None, name, candidate).ratio()
            if best is None or ratio > best[0]:
                best = (ratio, name, candidate)
    listing = ", ".join(f"`{n}`" for n in wanted)
    if best:
        return (f"no function named `{best[1]}` was found; did you mean `{best[2]}`? "
                f"(rename it to `{best[1]}`)")
    shown = ", ".join(f"`{n}`" for n in public[:8]) or "none"
    return f"no function named {listing} was found (functions defined: {shown})"


def base_metadata(seed: int, submission: str, function: str | None = None) -> dict[str, Any]:
    """What every report's metadata starts with, however the submission was run."""
    return {"seed": int(seed), "hidden_probes": seed != DEFAULT_SEED,
            "grader_version": __version__, "submission": submission, "function": function}


def grade(path: str | Path, *, assignment: str | None = None, seed: int = DEFAULT_SEED,
          limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Grade one submission and return its report (a dict that follows the shipped schema)."""
    started = time.monotonic()
    path = Path(path)
    metadata = base_metadata(seed, printable_name(path.name))

    def finish(report: dict[str, Any]) -> dict[str, Any]:
        report["metadata"]["duration_seconds"] = round(time.monotonic() - started, 3)
        return report

    try:
        submission = load.load(path)
    except load.LoadError as exc:
        told = assignment or infer_assignment(exc.defined) or "unknown"
        return finish(error_report(told, [exc.error], metadata))
    if assignment is not None and registry.exists(assignment) and \
            registry.get(assignment).multi_part:
        return finish(_grade_parts(submission, registry.get(assignment), seed, limits, metadata))

    planned = _Plan(assignment, seed)
    info, outcomes = sandbox.run(submission, planned, limits, prepare=import_numeric_stages)
    metadata["isolation"] = list(info.isolation)
    if info.stdout:
        metadata["stdout"] = info.stdout[:2000]
    chosen = planned.chosen
    load_errors = list(info.load_errors)
    if info.forbidden:
        error = GraderError("forbidden-import",
                            "the submission tried to reach the grader's own code: "
                            + "; ".join(info.forbidden) + ". Grading is refused.")
        return finish(error_report(chosen or "unknown", [error, *load_errors], metadata))
    if info.fatal is not None:
        return finish(error_report(chosen or "unknown", [info.fatal, *load_errors], metadata))
    if chosen is None or planned.probes is None:
        wanted = ([registry.get(chosen).function] if chosen else
                  [entry.function for entry in registry.inference_order()])
        whole = registry.offered(info.defined_functions) if assignment is None else None
        message = (missing_function_message(wanted, info.defined_functions) if whole is None
                   else f"no function named {', '.join(f'`{n}`' for n in wanted)} was found, but "
                   f"this file defines the parts of the course assignment `{whole}`: grade it "
                   f"with --assignment {whole}")
        if load_errors and submission.kind == "py":  # the file stopped before defining it
            message += "; loading stopped at the error above, which is what to fix first"
        elif load_errors:  # a cell stops at its error, and may have been the one to define it
            message += "; a cell above failed, and may be the one meant to define it"
        error = GraderError("missing-function", message)
        return finish(error_report(chosen or "unknown", [*load_errors, error], metadata))
    from grader.core import tiling
    from grader.core.assignments import get

    spec = get(chosen)
    metadata["function"] = spec.function
    measurement = _measurement(info, 0) if tiling.wanted(spec) else None
    report = evaluate(spec, planned.probes, outcomes, load_errors, metadata,
                      sources=submission.sources, measurement=measurement)
    return finish(check_fixes(report, submission.sources, lambda fixed: _regraded(
        dataclasses.replace(submission, sources=fixed), chosen, seed, limits, measurement)))


def _measurement(info: RunInfo, index: int) -> Measurement:
    """The run's measurement of its ``index``-th measured call, or why there is none."""
    if index < len(info.measurements):
        return info.measurements[index]
    return "the submission's run ended before the call could be made"


class _Plan:
    """What to call once the child has loaded the submission: the assignment asked for (or the
    one its functions show) and its probes. Until the child answers, the assignment asked for
    is the report's, so a submission that dies while loading is still reported under it."""

    def __init__(self, assignment: str | None, seed: int, measure: bool = True) -> None:
        self.asked, self.seed, self.measure = assignment, seed, measure
        self.chosen: str | None = assignment
        self.probes: list[Probe] | None = None

    def __call__(self, info: RunInfo) -> CallPlan | None:
        self.chosen = self.asked or infer_assignment(info.defined_functions)
        if info.fatal is not None or self.chosen is None:
            return None
        entry = registry.get(self.chosen)
        if entry.function not in info.defined_functions:
            return None
        from grader.core import tiling
        from grader.core.assignments import get

        assignment = get(self.chosen)
        self.probes = probes = assignment.probes(self.seed)

        def traces_for(outcomes: list[CallOutcome]) -> list[int]:
            from grader.core.scoring import answers_as_the_reference

            if answers_as_the_reference(assignment, probes, outcomes):
                return []
            return [i for i, probe in enumerate(probes) if probe.traced]

        return CallPlan(entry.function, probes, assignment.calling(), traces_for,
                        measured=tiling.probes_of(assignment, self.seed) if self.measure else [],
                        measured_seconds=tiling.SECONDS)


def check_fixes(report: dict[str, Any], sources: Sequence[str],
                regrade: Callable[[tuple[str, ...]], dict[str, Any]]) -> dict[str, Any]:
    """Each literal fix the report shows, applied to the student's own code (``sources``) as
    they would apply it and graded again (``regrade``: one more run per mistake with a fix):
    kept, marked ``checked``, when that mistake is gone, no other appears, the score does not
    drop and, where it was the only mistake, the code is then right or better; otherwise taken
    out, and the report says the fix in a sentence and quotes the line."""
    from grader.core.fixes import applied, edits_of

    before = {m["id"] for m in report["misconceptions"]}
    for finding in report["misconceptions"]:
        location = finding.get("location")
        if not location or not edits_of(location):
            continue
        again = regrade(applied(sources, location))
        named = {m["id"] for m in again["misconceptions"]}
        if (again["status"] == "graded" and finding["id"] not in named and named <= before
                and again["score"] >= report["score"]
                and (before - {finding["id"]} or _right_or_better(again, report))):
            location["checked"] = True
        else:
            _without_literal_fix(location)
    return report


def _right_or_better(again: dict[str, Any], report: dict[str, Any]) -> bool:
    """With its only mistake fixed, the code is right, or better and with nothing left that
    the grader locates: a fix of one of two lines that make one mistake (dQ fixed, dK still
    divided by d_k) names nothing more, yet leaves the code wrong, and is not shown."""
    return again["score"] == again["max_score"] or (
        "located" not in again and again["score"] > report["score"])


def _regraded(submission: load.Submission, assignment: str, seed: int, limits: Limits,
              measurement: Measurement) -> dict[str, Any]:
    """The code with a literal fix applied, graded again. A fix changes one term, not how the
    code holds its arrays: the tiling call is not made again, and the handed-in code's
    ``measurement`` stands for the fixed code's."""
    planned = _Plan(assignment, seed, measure=False)
    info, outcomes = sandbox.run(submission, planned, limits, prepare=import_numeric_stages)
    if info.fatal is not None or info.forbidden or planned.probes is None:
        return {"status": "error", "score": 0.0, "misconceptions": []}
    from grader.core.assignments import get

    return evaluate(get(assignment), planned.probes, outcomes, list(info.load_errors),
                    base_metadata(seed, ""), sources=(), measurement=measurement)


def _without_literal_fix(location: dict[str, Any]) -> None:
    """A location whose fix failed its check: the line alone (and the other lines named)."""
    location.pop("fixed", None)
    for other in location.pop("also", []):
        other.pop("fixed", None)


class _PartsPlan:
    """The calls of every part of a multi-part assignment, in one run: each part the
    submission defines is called on its own probes, through its own interface."""

    def __init__(self, parts: Sequence[tuple[Assignment, float]], seed: int) -> None:
        self.parts, self.seed = parts, seed
        #: each part's probes, or None for a part the submission does not define
        self.probes: list[list[Probe] | None] = [None] * len(parts)
        #: where each part's tiling call is among the plan's measured calls (None: it has none)
        self.measured_index: list[int | None] = [None] * len(parts)

    def __call__(self, info: RunInfo) -> CallPlan | None:
        from grader.core import tiling

        if info.fatal is not None:
            return None
        targets: list[dict[str, Any]] = []
        probes: list[Probe] = []
        target_of: list[int] = []
        measured: list[Probe] = []
        measured_of: list[int] = []
        for number, (part, _) in enumerate(self.parts):
            if part.function not in info.defined_functions:
                continue
            self.probes[number] = made = part.probes(self.seed)
            target_of += [len(targets)] * len(made)
            mine = tiling.probes_of(part, self.seed)
            self.measured_index[number] = len(measured) if mine else None
            measured += mine
            measured_of += [len(targets)] * len(mine)
            targets.append({"function": part.function, **part.calling()})
            probes += made
        if not probes:
            return None
        return CallPlan(targets[0]["function"], probes, None, self.traces_for, targets, target_of,
                        measured, measured_of, tiling.SECONDS)

    def traces_for(self, outcomes: list[CallOutcome]) -> list[int]:
        """The traced probes of each part that does not answer as the reference does."""
        from grader.core.scoring import answers_as_the_reference

        wanted, start = [], 0
        for (part, _), probes in zip(self.parts, self.probes):
            if probes is None:
                continue
            mine = outcomes[start: start + len(probes)]
            if not answers_as_the_reference(part, probes, mine):
                wanted += [start + i for i, probe in enumerate(probes) if probe.traced]
            start += len(probes)
        return wanted

    def outcomes_of(self, outcomes: Sequence[CallOutcome]
                    ) -> list[tuple[list[Probe], Sequence[CallOutcome]] | None]:
        """Each part's probes and outcomes (None for a part not defined)."""
        split: list[tuple[list[Probe], Sequence[CallOutcome]] | None] = []
        start = 0
        for probes in self.probes:
            if probes is None:
                split.append(None)
                continue
            split.append((probes, outcomes[start: start + len(probes)]))
            start += len(probes)
        return split


def _grade_parts(submission: load.Submission, info: registry.AssignmentInfo, seed: int,
                 limits: Limits, metadata: dict[str, Any]) -> dict[str, Any]:
    """Grade every part of a multi-part assignment from one run of the submission."""
    from grader.core.assignments import get
    from grader.core.report import PartReport, join_parts

    parts = [(get(registry.reference_of(found)), registry.part_max_score(found, part))
             for found, part in registry.parts_of(info)]
    planned = _PartsPlan(parts, seed)
    run, outcomes = sandbox.run(submission, planned, limits, prepare=import_numeric_stages)
    metadata["isolation"] = list(run.isolation)
    if run.stdout:
        metadata["stdout"] = run.stdout[:2000]
    load_errors = list(run.load_errors)
    whole: list[GraderError] = []
    if run.forbidden:
        whole = [GraderError("forbidden-import", "the submission tried to reach the grader's own "
                             "code: " + "; ".join(run.forbidden) + ". Grading is refused.")]
    elif run.fatal is not None:
        whole = [run.fatal]
    graded = []
    for number, ((part, worth), ran) in enumerate(zip(parts, planned.outcomes_of(outcomes))):
        own = {**metadata, "function": part.function}
        reference = registry.reference_of(part.info)
        if whole:
            report = error_report(reference, [*whole, *load_errors], own)
        elif ran is None:
            error = GraderError("missing-function", "this part is not written yet: "
                                + missing_function_message([part.function], run.defined_functions))
            report = error_report(reference, [*load_errors, error], own)
        else:
            where = planned.measured_index[number]
            report = evaluate(part, ran[0], ran[1], load_errors, own, sources=submission.sources,
                              measurement=None if where is None else _measurement(run, where))
        graded.append(PartReport(part.id, part.function, worth, report))
    metadata["function"] = ", ".join(part.function for part, _ in parts)
    return join_parts(info.id, graded, metadata)


def grade_or_crashed(path: str | Path, *, assignment: str | None = None,
                     seed: int = DEFAULT_SEED, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """``grade``, except that a failure of the grader itself still gives a valid report: status
    ``error``, kind ``crashed``, saying so (the command line, the action and batch use this)."""
    try:
        return grade(path, assignment=assignment, seed=seed, limits=limits)
    except Exception as exc:  # a bug of ours must leave a report, never a traceback
        return error_report(assignment or "unknown",
                            [GraderError("crashed", f"internal grader error: {exc!r}")],
                            {"submission": Path(path).name})


def evaluate(spec: Assignment, probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
             load_errors: Sequence[GraderError], metadata: dict[str, Any],
             sources: Sequence[str] = (), measurement: Measurement = None) -> dict[str, Any]:
    """Diagnose and score the outcomes of the calls (pure: arrays in, report out); the
    submission's ``sources`` let findings quote the line they come from; ``measurement`` is
    the tiling check's (``grader.core.tiling``), where the assignment has one."""
    from grader.core.diagnose import diagnose
    from grader.core.divergence import first_divergence
    from grader.core.raised import shape_error
    from grader.core.report import build, call_errors
    from grader.core.scoring import max_score, score_checks

    metadata["probes"] = len(probes)
    outcomes = spec.read_outcomes(probes, outcomes)
    if not any(o.ok for o in outcomes) and all(
        o.error_kind == "wrong-signature" for o in outcomes
    ):
        first = outcomes[0].message if outcomes else ""
        error = GraderError("wrong-signature",
                            f"`{spec.function}` cannot be called as `{spec.signature}`: {first}")
        return error_report(spec.id, [error, *load_errors], metadata)
    if outcomes and all(_raises_not_implemented(o) for o in outcomes):
        error = GraderError("runtime-error",
                            f"`{spec.function}` is not implemented yet: every call raised "
                            "NotImplementedError. Replace the `raise NotImplementedError(...)` "
                            "line of the stub with your implementation, then check again.")
        return error_report(spec.id, [error, *load_errors], metadata)
    import numpy as np

    with np.errstate(all="ignore"):  # student outputs may hold inf/NaN: judged, not warned about
        findings = diagnose(spec, probes, outcomes, sources)
        divergence = None if findings else (first_divergence(spec, probes, outcomes, sources)
                                            or shape_error(spec, probes, outcomes, sources))
        references = [spec.reference_on(p) for p in probes]
        checks = score_checks(spec, probes, outcomes, references, measurement)
        reference_outputs = [outputs[0] for outputs in references]
        if outcomes and all(o.ok for o in outcomes):
            # every call worked: a cell that failed while loading changed nothing, and a
            # package it could not import is one the graded code does not need: no note
            load_errors = [dataclasses.replace(e, affects_grade=False) for e in load_errors
                           if e.kind != "missing-dependency"]
        load_errors = each_package_once(load_errors)
        errors = [*load_errors, *call_errors(probes, outcomes, reference_outputs)]
    if metadata.get("hidden_probes"):
        # their messages show secret probe values, or (a failed interface check) text the
        # submission wrote on seeing them
        checks = [dataclasses.replace(c, hidden=c.category != "interface" or not c.passed)
                  for c in checks]
    score = sum(c.points for c in checks)
    coarse = sorted({o.output.dtype.name for o in outcomes if o.output is not None
                     and o.output.dtype.kind == "f" and o.output.dtype.itemsize < 4})
    if coarse:
        metadata["precision_note"] = (
            f"your function returned {', '.join(coarse)}, less precise than float32; its "
            "answers were judged with float32's tolerances")
    left_out = spec.left_out(metadata.get("seed", DEFAULT_SEED))
    if left_out:
        decided = {c.id for c in checks}
        metadata["not_probed"] = [
            {"check": c["id"], "why": "; ".join(sorted(set(left_out.values()))),
             "points": float(c["points"])}
            for c in spec.rubric()["checks"] if c["id"] not in decided]
    return build(assignment=spec.id, status="graded", score=score,
                 max_score=max_score(spec, probes),
                 conventions=spec.wording_terms(),
                 findings=findings, checks=checks, errors=errors, metadata=metadata,
                 divergence=divergence).to_dict()


_PACKAGE = re.compile(r"`([^`]+)` is not installed")


def each_package_once(errors: Sequence[GraderError]) -> list[GraderError]:
    """The errors with one ``missing-dependency`` per package (cells that import it again
    failed the same way: said once)."""
    seen: set[str] = set()
    kept = []
    for error in errors:
        found = _PACKAGE.search(error.message) if error.kind == "missing-dependency" else None
        if found and found.group(1) in seen:
            continue
        if found:
            seen.add(found.group(1))
        kept.append(error)
    return kept


def _raises_not_implemented(outcome: CallOutcome) -> bool:
    last = outcome.message.strip().splitlines()[-1] if outcome.message.strip() else ""
    return outcome.error_kind == "runtime-error" and last.startswith("NotImplementedError")


def error_report(assignment_id: str, errors: Sequence[GraderError],
                  metadata: dict[str, Any]) -> dict[str, Any]:
    from grader.core.report import build

    total = 10.0  # (an assignment that could not even be told)
    if registry.exists(assignment_id):
        info = registry.get(assignment_id)
        if info.multi_part:  # every part, with the error that stopped them all
            from grader.core.report import PartReport, join_parts

            return join_parts(info.id, [
                PartReport(found.id, found.function, registry.part_max_score(found, part),
                           error_report(registry.reference_of(found), errors, metadata))
                for found, part in registry.parts_of(info)], metadata)
        total = float(registry.rubric(assignment_id)["max_score"])
        assignment_id = info.id
    return build(assignment=assignment_id, status="error", score=0.0, max_score=total,
                 errors=each_package_once(errors), metadata=metadata).to_dict()


def _likely_first(files: Sequence[Path], function: str) -> list[Path]:
    """Candidates that mention the function first (a starter kit has both a stub and the work)."""
    def mentions(path: Path) -> bool:
        try:
            return f"def {function}" in path.read_text(errors="replace")
        except OSError:
            return False

    chosen = [f for f in files if mentions(f)]
    return chosen or list(files)


def grade_best_of(files: Sequence[Path], *, assignment: str, seed: int = DEFAULT_SEED,
                  limits: Limits = DEFAULT_LIMITS, label: str = "submission") -> dict[str, Any]:
    """One student's submission of several files (a notebook and a .py, the starter stub beside
    the work): each candidate is graded, those that define the function first, and the best
    report counts."""
    if not files:
        return error_report(assignment, [GraderError(
            "missing-function", "no .py file or .ipynb notebook was found in this submission")],
            {"submission": label})
    best: dict[str, Any] | None = None
    for path in _likely_first(files, registry.get(assignment).function)[:4]:
        report = grade_or_crashed(path, assignment=assignment, seed=seed, limits=limits)
        report["metadata"]["submission_path"] = printable_name(str(path))
        if best is None or report["score"] > best["score"]:
            best = report
    assert best is not None
    return best
