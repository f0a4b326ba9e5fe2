"""What a student reads is true, and for them (issue 34, item 5): a failed check never reads
like a pass, one line gets one replacement, a runtime error is told once with its count, the
evidence's numbers each say something, question-bank pointers fit the mistake, no course-facing
text or library jargon, a package note only where the code needs the package. Each on the
fixtures that show it, graded in-process (the fast tier) but for the notebook's package note."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader.notebook import grade_function
from grader.render import markdown, text
from grader.render.markdown import inline
from grader.render.verdict import error_line, read_more

from .conftest import SUBMISSIONS, notebook


def test_a_failed_check_never_says_what_a_passed_one_says() -> None:
    def scaled_dot_product_attention(Q: Any, K: Any, V: Any, mask: Any = None) -> Any:
        raise ValueError("shapes do not align")

    report = grade_function(scaled_dot_product_attention, "attention")
    checks = {c["id"]: c for c in report["checks"]}
    unchanged = checks["inputs-unchanged"]
    assert not unchanged["passed"] and unchanged["points"] == 0
    assert "no input array is modified" not in unchanged["message"]
    assert "could not be seen" in unchanged["message"]
    for check in report["checks"]:
        if not check["passed"]:
            assert not check["message"].startswith(("every ", "no input")), check


# --- issue 34, item 5: each bullet on the fixtures that show it -------------------------------

Graded = Callable[..., dict[str, Any]]
ALL = sorted(SUBMISSIONS.rglob("*.py"))
IDS = [str(p.relative_to(SUBMISSIONS).with_suffix("")) for p in ALL]


def _concept_titles(assignment: str) -> tuple[str, ...]:
    from grader.core.assignments import get

    return tuple(concept.title for concept in get(assignment).task.concepts)


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_no_failed_check_opens_with_what_a_pass_says(path: Path, graded: Graded) -> None:
    """A failed property check does not open with the property stated as if it held
    ("[FAIL] masked-keys-zero-weight: Masked keys get zero weight: ...")."""
    report = graded(path)
    titles = _concept_titles(report["assignment"]) if report["status"] == "graded" else ()
    for check in report["checks"]:
        if not check["passed"]:
            assert not check["message"].startswith(titles), check


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_one_line_gets_one_replacement(path: Path, graded: Graded) -> None:
    report = graded(path)
    given: dict[tuple[Any, int], str] = {}
    for item in report["misconceptions"]:
        location = item.get("location") or {}
        for edit in (location, *location.get("also", ())):
            if edit.get("fixed"):
                key = (edit.get("cell"), edit["line"])
                assert given.setdefault(key, edit["fixed"]) == edit["fixed"], item["id"]


@pytest.mark.parametrize("fixture", [
    "attention/combo_2d_only_dk.py", "causal_mask/combo_top_left_blocks_self.py",
    "multi_head_attention/combo_reshape_split_merge_no_wo.py",
    "positional_encoding/not_interleaved_swapped_hstack.py"])
def test_two_mistakes_on_one_line_get_its_line_quoted_once(fixture: str,
                                                         graded: Graded) -> None:
    """Two findings on one line, each with its own rewrite before: the first keeps its
    literal fix, the second points at the line above and says its fix in a sentence."""
    report = graded(SUBMISSIONS / fixture)
    items = report["misconceptions"]
    [(number, first, second)] = [
        (n, a, b) for n, a in enumerate(items, 1) for b in items[n:]
        if a.get("location") and b.get("location") and a["location"]["line"] ==
        b["location"]["line"]]
    assert "fixed" in first["location"] and "fixed" not in second["location"]
    assert second["fix"]
    shown = "\n".join(text.summary(report))
    assert shown.count(f"{first['location']['code']}\n") == 1
    assert f"the line quoted in {number}" in " ".join(shown.split())


def test_a_runtime_error_is_told_once_with_its_count(graded: Graded) -> None:
    """22 calls raise the same ValueError: its summary names the exception and the count, and
    no check repeats the exception (one ValueError was shown 12 times)."""
    report = graded(SUBMISSIONS / "attention" / "key_not_transposed.py")
    [error] = [e for e in report["errors"] if e["kind"] == "runtime-error"]
    line = error_line(error)
    assert line.startswith("ValueError: matmul") and "22 of 25 calls failed" in line
    assert not any("ValueError" in c["message"] for c in report["checks"])
    first_part = "\n".join(text.summary(report))
    assert first_part.count("ValueError") == 1


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_an_errors_summary_is_never_cut_before_its_exception(path: Path,
                                                             graded: Graded) -> None:
    for error in graded(path)["errors"]:
        lines = [x.strip() for x in error["message"].strip().splitlines() if x.strip()]
        exception = re.match(r"(\w+(Error|Exception|Warning)\b)", lines[-1]) if lines else None
        if error["kind"] == "runtime-error" and exception:
            assert exception.group(1) in error_line(error), error_line(error)


_YOURS_CORRECT = re.compile(r"yours (\S+), correct (\S+?)(?=[,.]\s|\.$|,$)")
_MISTAKE = re.compile(r"correct (\S+?), with this mistake (\S+?)(?=[,.]\s|\.$|,$| \()")


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_the_evidences_numbers_each_say_something(path: Path, graded: Graded) -> None:
    """Never "yours 1, correct 1" (yours is right there), never "with this mistake" beside the
    correct value, never "yours" twice in a sentence."""
    for item in graded(path)["misconceptions"]:
        for line in item["evidence"].splitlines():
            assert line.count("yours") <= 1, line
            numbers = _YOURS_CORRECT.search(line)
            if numbers:
                assert numbers.group(1) != numbers.group(2), line
            numbers = _MISTAKE.search(line)
            if numbers:
                assert numbers.group(1) != numbers.group(2), line


def test_yours_is_shown_where_yours_is_wrong(graded: Graded) -> None:
    """Two mask mistakes that cancel wherever one of them alone departs from the answer: the
    evidence says what that one alone gives, and no "yours" equal to the correct value."""
    [item] = [m for m in graded(SUBMISSIONS / "causal_mask" / "combo_triu_top_left.py")[
        "misconceptions"] if m["id"] == "causal-mask-top-left"]
    numbers = item["evidence"].splitlines()[1]
    assert "yours" not in numbers and "with this mistake alone 0" in numbers, numbers


#: question-bank items about masking the scores before the softmax
SOFTMAX_MASKING = {"A-edge-6", "B-15", "B-30"}


@pytest.mark.parametrize("path", sorted((SUBMISSIONS / "causal_mask").glob("*.py")),
                         ids=lambda p: p.stem)
def test_a_mask_builder_cites_no_item_on_masking_the_softmax(path: Path,
                                                             graded: Graded) -> None:
    for item in graded(path)["misconceptions"]:
        assert not SOFTMAX_MASKING & set(item["question_bank"]), item["id"]


@pytest.mark.parametrize("path", sorted((SUBMISSIONS / "rope").glob("*.py")),
                         ids=lambda p: p.stem)
def test_a_rope_report_does_not_say_positions_are_added(path: Path, graded: Graded) -> None:
    for item in graded(path)["misconceptions"]:
        assert "added" not in (read_more(item) or ""), read_more(item)


#: words for course staff, never for the student
COURSE_FACING = re.compile(r"course staff|a course can|can declare|staff decide", re.I)
#: library names a report may use only where the code does
JARGON = ("MultiheadAttention", "np.repeat", "np.tile", "repeat_interleave", "rotate_half",
          "GPT-NeoX", "Hugging Face")


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_the_page_is_for_the_student_in_the_codes_own_terms(path: Path,
                                                           graded: Graded) -> None:
    report = graded(path)
    source = path.read_text()
    for page in (text.render(report), markdown.render(report)):
        page = page.replace(path.name, "").replace(inline(path.name), "")  # (its own name)
        assert not COURSE_FACING.search(page), COURSE_FACING.search(page)
        for name in JARGON:
            assert name not in page or name in source, name


@pytest.mark.e2e
def test_an_unused_package_gets_no_note_and_a_needed_one_gets_one(grade_source) -> None:
    """A notebook cell imports a package the grader lacks, twice: at full marks (the graded
    function never uses it) no note; where the function needs it, one note."""
    correct = (SUBMISSIONS / "attention" / "correct_matmul.py").read_text()
    missing = "import attention_grader_no_such_package"
    unused = grade_source(notebook(missing, missing + " as again", correct),
                          name="attention.ipynb")
    assert unused["score"] == unused["max_score"]
    assert not [e for e in unused["errors"] if e["kind"] == "missing-dependency"]
    needed = correct.replace("import numpy as np",
                             "import numpy as np\nimport attention_grader_no_such_package as b")
    used = grade_source(notebook(missing, missing + " as again", needed), name="attention.ipynb")
    notes = [e for e in used["errors"] if e["kind"] == "missing-dependency"]
    assert len(notes) == 1, used["errors"]
