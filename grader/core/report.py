"""Stage 5: assemble the report (SPEC section 4) as a typed model, rendered to its JSON form and
validated against the shipped schema."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.core.probes import scored_only
from grader.model import (
    SET_ASIDE,
    CallOutcome,
    CheckResult,
    Finding,
    GraderError,
    Probe,
    SourcePlace,
)
from reference.catalogue import BY_ID, question_bank, wording
from reference.edits import in_dialect

if TYPE_CHECKING:
    from grader.core.divergence import Divergence

SCHEMA_VERSION = "1"
MAX_MESSAGE_CHARS = 4000


def _clean(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Student-derived text: printable, bounded."""
    if not text.replace("\n", "").replace("\t", "").isprintable():
        text = "".join(ch if ch.isprintable() or ch in "\n\t" else f"\\x{ord(ch):02x}"
                       for ch in text)
    return text if len(text) <= limit else text[: limit - 20] + " ... (truncated)"


@dataclass(frozen=True)
class MisconceptionEntry:
    id: str
    title: str
    explanation: str
    evidence: str
    question_bank: tuple[str, ...]
    #: what to change, in one sentence (an extension of SPEC's report)
    fix: str = ""
    #: the submission's line where the mistake enters, when it could be found from what the
    #: code computes: {"line", "code", "computes"} and "cell" for a notebook
    location: dict[str, Any] | None = None

    @classmethod
    def of(cls, finding: Finding, conventions: frozenset[str] = frozenset()
           ) -> MisconceptionEntry:
        row = BY_ID[finding.id]
        title, explanation, fix, _ = wording(row.id, conventions)
        location = _location(finding.place) if finding.place is not None else None
        explanation, fix = (in_dialect(text, finding.dialect, dict(finding.names))
                            for text in (explanation, finding.fix or fix))
        return cls(row.id, title, explanation, _clean(finding.evidence, 16_000),
                   question_bank(row.id, conventions), _clean(fix, 1000), location)

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": self.id, "title": self.title, "explanation": self.explanation,
            "evidence": self.evidence, "question_bank": list(self.question_bank)}
        if self.fix:
            entry["fix"] = self.fix
        if self.location:
            entry["location"] = dict(self.location)
        return entry


def _check_dict(check: CheckResult) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": check.id, "category": check.category, "passed": check.passed,
        "points": check.points, "max_points": check.max_points, "message": check.message,
        "question_bank": list(check.question_bank),
    }
    if check.hidden:
        entry["hidden"] = True
    return entry


@dataclass(frozen=True)
class ErrorEntry:
    kind: str
    message: str
    affects_grade: bool = True

    @classmethod
    def of(cls, error: GraderError) -> ErrorEntry:
        return cls(error.kind, _clean(error.message), error.affects_grade)

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if not self.affects_grade:
            entry["affects_grade"] = False
        return entry


@dataclass(frozen=True)
class Report:
    """The report, typed; ``to_dict`` gives the schema's JSON form (SPEC section 4), which is
    what every renderer and every user of ``grade()`` reads."""

    assignment: str
    status: str  # "graded" or "error"
    score: float
    max_score: float
    misconceptions: tuple[MisconceptionEntry, ...] = ()
    checks: tuple[CheckResult, ...] = ()  # messages cleaned (see ``build``)
    errors: tuple[ErrorEntry, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    #: a wrong submission no misconception explains: where it first goes wrong (an extension
    #: of SPEC's report: {"stage", "message"} and the "location" of the line when found)
    located: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "assignment": self.assignment,
            "status": self.status,
            "score": self.score,
            "max_score": self.max_score,
            "misconceptions": [m.to_dict() for m in self.misconceptions],
            "checks": [_check_dict(c) for c in self.checks],
            "errors": [e.to_dict() for e in self.errors],
            "metadata": self.metadata,
            **({"located": self.located} if self.located else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """A report read back from its JSON form (``batch`` reads earlier reports)."""
        return cls(
            data["assignment"], data["status"], data["score"], data["max_score"],
            tuple(MisconceptionEntry(m["id"], m["title"], m["explanation"], m["evidence"],
                                     tuple(m["question_bank"]), m.get("fix", ""),
                                     m.get("location")) for m in data["misconceptions"]),
            tuple(CheckResult(c["id"], c["category"], c["passed"], c["points"], c["max_points"],
                              c["message"], tuple(c["question_bank"]), c.get("hidden", False))
                  for c in data["checks"]),
            tuple(ErrorEntry(e["kind"], e["message"], e.get("affects_grade", True))
                  for e in data["errors"]),
            dict(data.get("metadata", {})),
            data.get("located"),
        )


def call_errors(probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
                reference_outputs: Sequence[np.ndarray | None]) -> list[GraderError]:
    """One report error per kind of failed call (the first occurrence), plus wrong shapes and
    non-finite outputs where the reference is finite. Counted over the calls the checks count
    (not those made for diagnosis only), so that the numbers agree with theirs."""
    errors: dict[str, GraderError] = {}
    probes, outcomes, reference_outputs = scored_only(probes, outcomes, reference_outputs)
    for probe, outcome, expected in zip(probes, outcomes, reference_outputs):
        if outcome.error_kind and outcome.error_kind not in errors:
            failed = [o.probe_id for o in outcomes if o.error_kind == outcome.error_kind]
            listed = ", ".join(failed[:10]) + (", ..." if len(failed) > 10 else "")
            last = outcome.message.strip()
            errors[outcome.error_kind] = GraderError(
                outcome.error_kind,
                f"{len(failed)} of {len(outcomes)} calls failed this way (test inputs: {listed}); "
                f"first on test input '{probe.id}': {last}")
        if outcome.ok and outcome.message.startswith(SET_ASIDE) and "wrong-shape" not in errors:
            errors["wrong-shape"] = GraderError(
                "wrong-shape", f"on test input '{probe.id}' "
                f"{outcome.message.removeprefix(SET_ASIDE)}")
        if not outcome.ok or expected is None:
            continue
        assert outcome.output is not None
        if outcome.output.shape != expected.shape and "wrong-shape" not in errors:
            errors["wrong-shape"] = GraderError(
                "wrong-shape", f"on test input '{probe.id}' the output has shape "
                f"{tuple(outcome.output.shape)}; expected {tuple(expected.shape)}.")
        elif (outcome.output.shape == expected.shape and "non-finite-output" not in errors
              and not np.all(np.isfinite(outcome.output)) and np.all(np.isfinite(expected))):
            errors["non-finite-output"] = GraderError(
                "non-finite-output", f"on test input '{probe.id}' the output contains NaN or inf "
                "where the correct result is finite.")
    return list(errors.values())


def build(*, assignment: str, status: str, score: float, max_score: float,
          findings: Sequence[Finding] = (), checks: Sequence[CheckResult] = (),
          errors: Sequence[GraderError] = (), metadata: dict[str, Any] | None = None,
          conventions: frozenset[str] = frozenset(),
          divergence: Divergence | None = None) -> Report:
    """The report; ``conventions`` (a course's, see ``catalogue.wording``) word the findings."""
    return Report(assignment, status, round(float(score), 4), round(float(max_score), 4),
                  one_replacement_per_line(
                      tuple(MisconceptionEntry.of(f, conventions) for f in findings)),
                  tuple(dataclasses.replace(c, message=_clean(c.message),
                                            question_bank=tuple(c.question_bank))
                        for c in checks),
                  tuple(ErrorEntry.of(e) for e in errors), metadata or {},
                  _located(divergence))


def one_replacement_per_line(entries: tuple[MisconceptionEntry, ...]
                             ) -> tuple[MisconceptionEntry, ...]:
    """The findings, with no line given two different replacements: a later finding whose
    literal fix rewrites a line an earlier one already rewrites otherwise keeps its line and its
    sentence, not its literal fix (applied after the first, it would undo it)."""
    rewritten: dict[tuple[Any, Any], str] = {}
    out = []
    for entry in entries:
        location = entry.location or {}
        edits = [edit for edit in (location, *location.get("also", ())) if edit.get("fixed")]
        if any(rewritten.get((e.get("cell"), e["line"]), e["fixed"]) != e["fixed"]
               for e in edits):
            # (as a fix that failed its check: the line alone, ``pipeline._without_literal_fix``)
            kept = {key: value for key, value in location.items() if key not in ("fixed", "also")}
            entry = dataclasses.replace(entry, location=kept)
        else:
            rewritten.update({(e.get("cell"), e["line"]): e["fixed"] for e in edits})
        out.append(entry)
    return tuple(out)


def _located(divergence: Divergence | None) -> dict[str, Any] | None:
    if divergence is None:
        return None
    located: dict[str, Any] = {"stage": divergence.stage,
                               "message": _clean(divergence.message, 1000)}
    if divergence.place is not None:
        located["location"] = _location(divergence.place)
    return located


def _location(place: SourcePlace) -> dict[str, Any]:
    location: dict[str, Any] = {"line": place.line, "code": _clean(place.code, 200),
                                "computes": place.computes}
    if place.cell is not None:
        location["cell"] = place.cell
    if place.fixed:
        location["fixed"] = _clean(place.fixed, 1000)
    if place.also:
        location["also"] = [_location(other) for other in place.also]
    return location


@cache
def schema() -> dict[str, Any]:
    text = (resources.files("grader") / "schema" / "report.schema.json").read_text()
    return dict(json.loads(text))


@cache
def _validator() -> Any:
    """The shipped schema's validator, the schema checked once: ``jsonschema.validate`` checks
    and compiles it on every call, the better part of a notebook self-check's time."""
    import jsonschema  # only when asked: it is slow to import and grading never needs it

    shipped = schema()
    kind = jsonschema.validators.validator_for(shipped)
    kind.check_schema(shipped)
    return kind(shipped)


def validate(report: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` if the report does not follow the shipped schema
    (the error ``jsonschema.validate`` raises: the best match)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(report))
    if error is not None:
        raise error


@dataclass(frozen=True)
class PartReport:
    """One part of a multi-part assignment as graded: its assignment ID, its function, the
    points it is worth, and its report (as any one assignment's)."""

    assignment: str
    function: str
    worth: float
    report: dict[str, Any]


def _allocated(maxima: Sequence[float], worth: float) -> list[float]:
    """``worth`` shared among checks in proportion to their maxima, in whole credit steps that
    add up to it exactly (the largest remainders get the steps left over)."""
    import math

    from grader.core.scoring import CREDIT_STEP

    total, steps = sum(maxima), round(worth / CREDIT_STEP)
    if total <= 0:
        return [0.0 for _ in maxima]
    exact = [m / total * steps for m in maxima]
    shares = [math.floor(e + 1e-9) for e in exact]
    for i in sorted(range(len(exact)), key=lambda i: shares[i] - exact[i])[:steps - sum(shares)]:
        shares[i] += 1
    return [round(share * CREDIT_STEP, 4) for share in shares]


def _scaled(checks: list[dict[str, Any]], worth: float, part: str) -> list[dict[str, Any]]:
    """A part's checks with their points in the part's worth (whole credit steps, so that
    every view can show them exactly; partial credit rounded down), each saying its part."""
    from grader.core.scoring import partial_credit

    return [{**check, "points": partial_credit(most, check["points"], check["max_points"]),
             "max_points": most, "part": part}
            for check, most in zip(checks, _allocated([c["max_points"] for c in checks], worth))]


def join_parts(assignment: str, parts: Sequence[PartReport],
               metadata: dict[str, Any]) -> dict[str, Any]:
    """The report of a multi-part assignment (SPEC section 4, ``parts``): each part's report
    scaled to the points it is worth (its score the sum of its checks' scaled points), the top-level score and maximum their sums, and the
    top-level misconceptions, checks and errors the parts' gathered, each saying its part."""
    joined: list[dict[str, Any]] = []
    for part in parts:
        report = part.report
        checks = _scaled(report["checks"], part.worth, part.assignment)
        entry = {"assignment": part.assignment, "function": part.function,
                 "status": report["status"],
                 "score": round(sum(check["points"] for check in checks), 4),
                 "max_score": part.worth,
                 "misconceptions": [{**m, "part": part.assignment}
                                    for m in report["misconceptions"]],
                 "checks": checks,
                 "errors": [{**e, "part": part.assignment} for e in report["errors"]]}
        if "located" in report:
            entry["located"] = report["located"]
        if report.get("metadata", {}).get("not_probed"):
            entry["not_probed"] = report["metadata"]["not_probed"]
        joined.append(entry)
    graded = any(entry["status"] == "graded" for entry in joined)
    return {"schema_version": SCHEMA_VERSION, "assignment": assignment,
            "status": "graded" if graded else "error",
            "score": round(sum(entry["score"] for entry in joined), 4),
            "max_score": round(sum(entry["max_score"] for entry in joined), 4),
            "misconceptions": [m for entry in joined for m in entry["misconceptions"]],
            "checks": [c for entry in joined for c in entry["checks"]],
            "errors": [e for entry in joined for e in entry["errors"]],
            "metadata": metadata, "parts": joined}
