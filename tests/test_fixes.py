"""A fix applied literally fixes the mistake and creates no other.

Every fixture with a mistake is graded; wherever the report gives a literal fix (the quoted line
rewritten, ``location.fixed``), the fix is applied exactly as a student would (the line replaced,
indented as it was) and the result graded again: that mistake must be gone and no mistake the
submission did not have may appear. Every catalogue row that has rewrites must have such a fix
verified on at least one fixture; the rows that have none are named here with the reason.
Fixtures and their fixed copies are our own code: graded as ``--fixture-grading`` says (in this
process by default; see conftest.py), the fixtures through the session's cache.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference.catalogue import CATALOGUE

from .conftest import SUBMISSIONS, expected_ids, gradable, grade_trusted, graded_as

#: every fixture graded, then each fix graded again: the default tier's breadth
pytestmark = pytest.mark.breadth

#: rows whose fix is a change of structure, never one line: the report gives the sentence alone
SENTENCE_ONLY = {
    "heads-not-split": "splitting heads adds a reshape, a transpose and a merge",
    "mask-misbroadcast": "no line computes a value of its own: the broadcast happens inside "
                         "the masking call",
    "rope-halves-not-interleaved": "the pairing is spread over the slicing and the writing back",
    "rope-no-rotation-partner": "the partner must be brought in, a new term on each line",
    "rope-before-head-split": "the rotation moves after the split, from one line to another",
    # tiled attention: the running updates, the final division and L have literal fixes in
    # the code's own names of the running quantities; these change structure or state
    "tile-local-softmax": "one softmax across tiles needs a running max and sum: new state",
    "finite-initial-max": "the sentinel is set before the loop, far from the output's line",
    "remainder-tile-dropped": "the tile count and the tile's end are two places",
    "causal-mask-tile-local": "the tile's offsets enter the row and the column numbers",
    # the backward pass: not written yet; each is one line in the fixtures, but the line's
    # shapes (a product, a sum, a scale) are many and the rewrites are left to do
    "softmax-backward-output-as-logits": "the second softmax is removed, often over two lines",
}


def _fixtures() -> Iterator[tuple[Path, str]]:
    for path in sorted(SUBMISSIONS.glob("*/*.py")):
        if path.parent.name not in ("presets", "frameworks", "partial", "unexplained"):
            yield path, path.parent.name
    for path in sorted((SUBMISSIONS / "frameworks").glob("*/*.py")):
        yield path, path.parent.name
    for path in sorted((SUBMISSIONS / "presets").glob("*/*.py")):
        yield path, path.parent.name


def applied(source: str, location: dict[str, Any]) -> str:
    """``source`` with the quoted line, and every other line the fix names, replaced by its
    fixed code, indented as it was (bottom up, so that added lines move nothing still to do)."""
    lines = source.split("\n")
    edits = [location, *location.get("also", [])]
    for edit in sorted(edits, key=lambda e: -e["line"]):
        old = lines[edit["line"] - 1]
        indent = old[: len(old) - len(old.lstrip())]
        lines[edit["line"] - 1: edit["line"]] = [indent + new for new in edit["fixed"].split("\n")]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def literal_fixes(tmp_path_factory: pytest.TempPathFactory,
                  grading_mode: str) -> list[dict[str, Any]]:
    """Every literal fix the reports on the fixtures give, applied and graded again (the
    fixtures that need a framework not installed here left out)."""
    results = []
    for path, assignment in _fixtures():
        if not expected_ids(path) or not gradable(path, assignment):
            continue
        report = graded_as(path, assignment, mode=grading_mode)
        had = {m["id"] for m in report["misconceptions"]}
        for finding in report["misconceptions"]:
            location = finding.get("location") or {}
            if not location.get("fixed"):
                continue
            fixed_dir = tmp_path_factory.mktemp("fixed")
            fixed_path = fixed_dir / path.name
            fixed_path.write_text(applied(path.read_text(), location))
            again = grade_trusted(fixed_path, assignment, mode=grading_mode)
            results.append({
                "fixture": f"{path.parent.name}/{path.name}", "id": finding["id"],
                "fixed": location["fixed"], "had": had,
                "after": {m["id"] for m in again["misconceptions"]},
                "status": again["status"],
                # with no mistake left: right, or wrong only where it already failed to run
                "right": again["score"] == again["max_score"] or (
                    "located" not in again
                    and {e["kind"] for e in again["errors"]} <= {e["kind"] for e in report["errors"]}
                    and again["score"] > report["score"])})
    return results


def _works(result: dict[str, Any]) -> bool:
    """The mistake is gone, nothing new came, and with nothing left the code is right."""
    left = result["had"] - {result["id"]}
    return (result["status"] == "graded" and result["after"] <= left
            and (bool(result["after"]) or result["right"] or bool(left)))


def test_a_literal_fix_removes_its_mistake_and_adds_none(
        literal_fixes: list[dict[str, Any]]) -> None:
    broken = [(r["fixture"], r["id"], r["fixed"], sorted(r["after"]))
              for r in literal_fixes if not _works(r)]
    assert literal_fixes and not broken, broken


def test_every_rewritable_row_has_a_literal_fix_that_works(
        literal_fixes: list[dict[str, Any]]) -> None:
    working = {r["id"] for r in literal_fixes if _works(r)}
    rows = {row.id for row in CATALOGUE if row.rewrites}
    assert rows - working == set()
    assert {row.id for row in CATALOGUE if not row.rewrites} == set(SENTENCE_ONLY)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_fix_speaks_the_submissions_framework(literal_fixes: list[dict[str, Any]]) -> None:
    torch_fixes = [r for r in literal_fixes if r["fixture"].startswith("attention/torch_")
                   or "/torch_" in r["fixture"]]
    told = {r["id"]: r["fixed"] for r in torch_fixes}
    assert any("masked_fill(~keep" in r["fixed"] for r in torch_fixes
               if r["id"] == "mask-inverted")
    assert "amax(dim=-1, keepdim=True)" in told["unstable-softmax"]
    assert "torch.softmax(scores, dim=-1)" in told["softmax-over-queries"]
    assert "np." not in "".join(told.values())
