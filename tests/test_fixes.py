"""A fix applied literally fixes the mistake and creates no other.

Every fixture with a mistake is graded; wherever the report gives a literal fix (the quoted line
rewritten, ``location.fixed``), the fix is applied exactly as a student would (the line replaced,
indented as it was) and the result graded again: that mistake must be gone and no mistake the
submission did not have may appear. Every catalogue row that has rewrites must have such a fix
verified on at least one fixture; the rows that have none are named here with the reason.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grader import grade
from reference.catalogue import CATALOGUE

from .conftest import SUBMISSIONS, expected_ids, needs_framework

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

#: rows whose fix is a change of structure, never one line: the report gives the sentence alone
SENTENCE_ONLY = {
    "heads-not-split": "splitting heads adds a reshape, a transpose and a merge",
    "mask-misbroadcast": "no line computes a value of its own: the broadcast happens inside "
                         "the masking call",
    "no-batch-support": "found from which calls fail, not from a value a line computes",
}


def _fixtures() -> Iterator[tuple[Path, str]]:
    for path in sorted(SUBMISSIONS.glob("*/*.py")):
        if path.parent.name not in ("presets", "frameworks", "partial", "unexplained"):
            yield path, path.parent.name
    for path in sorted((SUBMISSIONS / "frameworks").glob("*/*.py")):
        yield path, path.parent.name
    for path in sorted((SUBMISSIONS / "presets").glob("*/*.py")):
        yield path, path.parent.name


def applied(source: str, line: int, fixed: str) -> str:
    """``source`` with line ``line`` (from 1) replaced by ``fixed``, indented as it was."""
    lines = source.split("\n")
    old = lines[line - 1]
    indent = old[: len(old) - len(old.lstrip())]
    return "\n".join([*lines[: line - 1], *(indent + new for new in fixed.split("\n")),
                      *lines[line:]])


def _usable(assignment: str) -> bool:
    try:
        needs_framework(assignment)
    except pytest.skip.Exception:
        return False
    return True


@pytest.fixture(scope="module")
def literal_fixes(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Every literal fix the reports on the fixtures give, applied and graded again."""
    results = []
    for path, assignment in _fixtures():
        if not expected_ids(path) or not _usable(assignment):
            continue
        report = grade(path, assignment=assignment)
        had = {m["id"] for m in report["misconceptions"]}
        for finding in report["misconceptions"]:
            location = finding.get("location") or {}
            if not location.get("fixed"):
                continue
            fixed_dir = tmp_path_factory.mktemp("fixed")
            fixed_path = fixed_dir / path.name
            fixed_path.write_text(applied(path.read_text(), location["line"], location["fixed"]))
            again = grade(fixed_path, assignment=assignment)
            results.append({
                "fixture": f"{path.parent.name}/{path.name}", "id": finding["id"],
                "fixed": location["fixed"], "had": had,
                "after": {m["id"] for m in again["misconceptions"]},
                "status": again["status"]})
    return results


def test_a_literal_fix_removes_its_mistake_and_adds_none(
        literal_fixes: list[dict[str, Any]]) -> None:
    broken = [(r["fixture"], r["id"], r["fixed"], sorted(r["after"]))
              for r in literal_fixes
              if r["status"] != "graded" or r["id"] in r["after"]
              or not r["after"] <= r["had"] - {r["id"]}]
    assert literal_fixes and not broken, broken


def test_every_rewritable_row_has_a_literal_fix_that_works(
        literal_fixes: list[dict[str, Any]]) -> None:
    working = {r["id"] for r in literal_fixes
               if r["status"] == "graded" and r["id"] not in r["after"]
               and r["after"] <= r["had"] - {r["id"]}}
    rows = {row.id for row in CATALOGUE if row.rewrites}
    assert rows - working == set()
    assert {row.id for row in CATALOGUE if not row.rewrites} == set(SENTENCE_ONLY)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_fix_speaks_the_submissions_framework(literal_fixes: list[dict[str, Any]]) -> None:
    torch_fixes = [r for r in literal_fixes if r["fixture"].startswith("attention/torch_")
                   or "/torch_" in r["fixture"]]
    told = {r["id"]: r["fixed"] for r in torch_fixes}
    assert "masked_fill(~keep" in told["mask-inverted"]
    assert "amax(dim=-1, keepdim=True)" in told["unstable-softmax"]
    assert "torch.softmax(scores, dim=-1)" in told["softmax-over-queries"]
    assert "np." not in "".join(told.values())
