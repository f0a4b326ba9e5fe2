"""Stage 5: assemble the report (SPEC section 4) as plain JSON-ready data, and validate it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from grader.model import CallOutcome, CheckResult, Finding, GraderError, Probe
from reference.catalogue import BY_ID

SCHEMA_VERSION = "1"
MAX_MESSAGE_CHARS = 4000


def _clean(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Student-derived text: printable, bounded."""
    text = "".join(ch if ch.isprintable() or ch in "\n\t" else f"\\x{ord(ch):02x}" for ch in text)
    return text if len(text) <= limit else text[: limit - 20] + " ... (truncated)"


def misconception_entry(finding: Finding) -> dict[str, Any]:
    row = BY_ID[finding.id]
    return {
        "id": row.id,
        "title": row.title,
        "explanation": row.explanation,
        "evidence": _clean(finding.evidence, 16_000),
        "question_bank": list(row.question_bank),
    }


def check_entry(check: CheckResult) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": check.id,
        "category": check.category,
        "passed": check.passed,
        "points": check.points,
        "max_points": check.max_points,
        "message": _clean(check.message),
        "question_bank": list(check.question_bank),
    }
    if check.hidden:
        entry["hidden"] = True
    return entry


def error_entry(error: GraderError) -> dict[str, Any]:
    return {"kind": error.kind, "message": _clean(error.message)}


def call_errors(probes: Sequence[Probe], outcomes: Sequence[CallOutcome],
                reference_outputs: Sequence[np.ndarray | None]) -> list[GraderError]:
    """One report error per kind of failed call (the first occurrence), plus wrong shapes and
    non-finite outputs where the reference is finite."""
    errors: dict[str, GraderError] = {}
    for probe, outcome, expected in zip(probes, outcomes, reference_outputs):
        if outcome.error_kind and outcome.error_kind not in errors:
            count = sum(o.error_kind == outcome.error_kind for o in outcomes)
            last = outcome.message.strip()
            errors[outcome.error_kind] = GraderError(
                outcome.error_kind,
                f"{count} of {len(outcomes)} calls failed this way; first on probe "
                f"'{probe.id}': {last}")
        if not outcome.ok or expected is None:
            continue
        assert outcome.output is not None
        if outcome.output.shape != expected.shape and "wrong-shape" not in errors:
            errors["wrong-shape"] = GraderError(
                "wrong-shape", f"on probe '{probe.id}' the output has shape "
                f"{tuple(outcome.output.shape)}; expected {tuple(expected.shape)}.")
        elif (outcome.output.shape == expected.shape and "non-finite-output" not in errors
              and not np.all(np.isfinite(outcome.output)) and np.all(np.isfinite(expected))):
            errors["non-finite-output"] = GraderError(
                "non-finite-output", f"on probe '{probe.id}' the output contains NaN or inf "
                "where the correct result is finite.")
    return list(errors.values())


def build(*, assignment: str, status: str, score: float, max_score: float,
          findings: Sequence[Finding] = (), checks: Sequence[CheckResult] = (),
          errors: Sequence[GraderError] = (), metadata: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "assignment": assignment,
        "status": status,
        "score": round(float(score), 4),
        "max_score": round(float(max_score), 4),
        "misconceptions": [misconception_entry(f) for f in findings],
        "checks": [check_entry(c) for c in checks],
        "errors": [error_entry(e) for e in errors],
        "metadata": metadata or {},
    }


@cache
def schema() -> dict[str, Any]:
    text = resources.files("grader").joinpath("schema", "report.schema.json").read_text()
    return dict(json.loads(text))


def validate(report: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` if the report does not follow the shipped schema."""
    import jsonschema  # only when asked: it is slow to import and grading never needs it

    jsonschema.validate(report, schema())
