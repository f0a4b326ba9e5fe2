"""A course's whole assignment in one run: an assignment made of parts (each an assignment, with
its weight) is graded from one run of the submission into one report with a part for each, and
every view shows each part and the total."""

from __future__ import annotations

import base64
import csv
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from grader import registry
from grader.core.report import PartReport, join_parts, validate

SUBMISSIONS = Path(__file__).parent / "submissions"
PARTS = ("softmax", "attention", "causal_mask")


def _course(tmp_path: Path, body: str) -> str:
    folder = tmp_path / "unit"
    folder.mkdir(exist_ok=True)
    (folder / "assignment.toml").write_text(f'id = "unit"\nkind = "course"\n{body}')
    return str(folder)


def _unit(tmp_path: Path) -> str:
    return _course(tmp_path, '[[parts]]\nassignment = "softmax"\nweight = 2\n'
                             '[[parts]]\nassignment = "attention"\nweight = 5\n'
                             '[[parts]]\nassignment = "causal_mask"\n')


def _submission(tmp_path: Path, *sources: str) -> Path:
    path = tmp_path / "unit.py"
    path.write_text("\n\n".join((SUBMISSIONS / s).read_text() for s in sources))
    return path


@pytest.mark.parametrize("body,message", [
    ('[[parts]]\nassignment = "atention"\n', "part 1: unknown assignment 'atention'"),
    ('[[parts]]\nassignment = "cs231n-transformer-layers"\n', "is itself made of parts"),
    ('task = "attention"\n[[parts]]\nassignment = "attention"\n',
     "task belong(s) to the parts"),
    ('[[parts]]\nassignment = "attention"\nweight = 0\n', "weight must be a number above 0"),
    ('[[parts]]\nweight = 2\n', "part 1 names no assignment"),
    ("parts = []\n", "at least one"),
])
def test_a_multi_part_folder_is_checked_when_read(tmp_path: Path, body: str,
                                                  message: str) -> None:
    with pytest.raises(ValueError) as raised:
        registry.get(_course(tmp_path, body))
    assert message in str(raised.value)


def test_the_presets_list_their_parts_and_the_total_is_the_weights() -> None:
    for preset, count in (("coursera-dls-c5w4", 3), ("cs231n-transformer-layers", 2),
                          ("cs336-a2-flash-attention", 2),
                          ("cs336-a1-attention", 4)):
        parts = registry.parts_of(registry.get(preset))
        assert len(parts) == count
        assert registry.rubric(preset)["max_score"] == 10.0 * count
        assert all(not found.multi_part and found.function for found, _ in parts)


def _part(assignment: str, points: list[tuple[float, float]], status: str = "graded",
          misconceptions: tuple[str, ...] = ()) -> dict[str, Any]:
    checks = [{"id": f"check-{i}", "category": "reference", "passed": got == most,
               "points": got, "max_points": most, "message": "m", "question_bank": []}
              for i, (got, most) in enumerate(points)]
    return {"schema_version": "1", "assignment": assignment, "status": status,
            "score": sum(g for g, _ in points), "max_score": sum(m for _, m in points),
            "misconceptions": [{"id": m, "title": "t", "explanation": "e",
                                "evidence": "secret 0.123", "question_bank": []}
                               for m in misconceptions],
            "checks": checks, "errors": [], "metadata": {}}


def test_parts_are_scaled_to_their_weight_in_whole_credit_steps() -> None:
    first = _part("attention", [(2.0, 2.0), (0.6, 1.5), (0.2, 0.2), (0.0, 2.8)],
                  misconceptions=("scale-by-dk",))
    second = _part("softmax", [(1.0, 1.0), (1.0, 1.0)])
    report = join_parts("unit", [PartReport("attention", "f", 10.0, first),
                                 PartReport("softmax", "g", 3.0, second)],
                        {"hidden_probes": False})
    validate(report)
    attention, softmax = report["parts"]
    assert attention["max_score"] == 10.0 and softmax["max_score"] == softmax["score"] == 3.0
    for part in report["parts"]:
        assert sum(c["max_points"] for c in part["checks"]) == pytest.approx(part["max_score"])
        assert sum(c["points"] for c in part["checks"]) == pytest.approx(part["score"])
        for check in part["checks"]:
            assert round(check["points"] * 10) == pytest.approx(check["points"] * 10)
    assert report["score"] == pytest.approx(attention["score"] + softmax["score"])
    assert report["max_score"] == 13.0
    assert [m["part"] for m in report["misconceptions"]] == ["attention"]
    assert {c["part"] for c in report["checks"]} == {"attention", "softmax"}


def test_hidden_tests_withhold_every_parts_evidence_and_every_view_shows_each_part() -> None:
    from grader.platforms import RENDERERS
    from grader.render.visible import student_view

    part = _part("attention", [(1.0, 2.0)], misconceptions=("scale-by-dk",))
    report = join_parts("unit", [PartReport("attention", "f", 10.0, part),
                                 PartReport("softmax", "g", 10.0, _part("softmax", [(1, 1)]))],
                        {"hidden_probes": True, "seed": 5, "submission": "s.py"})
    view = student_view(report)
    assert "secret 0.123" not in json.dumps(view)
    assert "secret 0.123" in json.dumps(report)  # (the view did withhold something)
    for name in ("text", "markdown", "html"):
        page = RENDERERS[name](view)
        assert "Part 1 of 2" in page and "Part 2 of 2" in page, name
        assert "Total: 15 / 20" in page.replace("<b>", "").replace("**", ""), name


def test_platforms_count_every_part_with_the_reports_total(tmp_path: Path) -> None:
    """A part not graded still counts its points: Gradescope and Classroom add up to the
    report's score out of its maximum."""
    from grader.platforms import github, gradescope

    missing = _part("causal_mask", [], status="error")
    missing["errors"] = [{"kind": "missing-function", "message": "not written"}]
    missing["max_score"] = 10.0
    report = join_parts("unit", [
        PartReport("attention", "f", 5.0, _part("attention", [(1.5, 2.0), (0.0, 1.0)])),
        PartReport("causal_mask", "g", 10.0, missing)], {})
    results = json.loads(gradescope.render(report))
    assert sum(t["max_score"] for t in results["tests"]) == pytest.approx(report["max_score"])
    assert sum(t["score"] for t in results["tests"]) == pytest.approx(report["score"])
    assert "causal_mask: submission could be graded" in [t["name"] for t in results["tests"]]
    classroom = json.loads(base64.b64decode(github.render(report)))
    assert classroom["max_score"] == report["max_score"]
    assert sum(t["score"] for t in classroom["tests"]) == pytest.approx(report["score"])


@pytest.mark.e2e
def test_a_three_part_file_is_graded_in_one_run_with_a_total(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grader import grade, sandbox

    runs = []
    real = sandbox.run
    monkeypatch.setattr(sandbox, "run", lambda *a, **k: runs.append(1) or real(*a, **k))
    path = _submission(tmp_path, "softmax/correct_basic.py", "attention/scale_by_dk.py")
    report = grade(path, assignment=_unit(tmp_path))
    validate(report)
    assert len(runs) == 1
    softmax, attention, causal_mask = report["parts"]
    assert [p["assignment"] for p in report["parts"]] == list(PARTS)
    assert softmax["score"] == softmax["max_score"] == 2.0
    assert [m["id"] for m in attention["misconceptions"]] == ["scale-by-dk"]
    assert 0 < attention["score"] < attention["max_score"] == 5.0
    assert causal_mask["status"] == "error" and causal_mask["score"] == 0
    assert [e["kind"] for e in causal_mask["errors"]] == ["missing-function"]
    assert "not written yet" in causal_mask["errors"][0]["message"]
    assert report["score"] == pytest.approx(softmax["score"] + attention["score"])
    assert report["max_score"] == 2.0 + 5.0 + 10.0
    assert [m["part"] for m in report["misconceptions"]] == ["attention"]


@pytest.mark.e2e
def test_a_stub_part_scores_zero_and_the_others_are_graded(tmp_path: Path) -> None:
    from grader import grade

    path = _submission(tmp_path, "softmax/correct_basic.py", "attention/correct_matmul.py")
    path.write_text(path.read_text() + "\n\ndef causal_mask(n, m=None):\n"
                    "    raise NotImplementedError('write me')\n")
    report = grade(path, assignment=_unit(tmp_path))
    assert [p["score"] for p in report["parts"]] == [2.0, 5.0, 0.0]
    assert "not implemented yet" in report["parts"][2]["errors"][0]["message"]


@pytest.mark.e2e
def test_a_class_of_a_multi_part_assignment_has_a_column_per_part(tmp_path: Path) -> None:
    from grader.batch import discover, run_batch

    course = _unit(tmp_path)
    folder = tmp_path / "class"
    folder.mkdir()
    for student, sources in (("ana", ("softmax/correct_basic.py", "attention/scale_by_dk.py")),
                             ("ben", ("causal_mask/correct_tril.py",))):
        (folder / f"{student}.py").write_text(
            "\n\n".join((SUBMISSIONS / s).read_text() for s in sources))
    out = tmp_path / "out"
    run_batch(discover([str(folder)]), course, out, jobs=2)  # (the pool warms every part)
    rows = list(csv.DictReader((out / "summary.csv").read_text().splitlines()))
    assert [r["student"] for r in sorted(rows, key=lambda r: r["student"])] == ["ana", "ben"]
    ana = next(r for r in rows if r["student"] == "ana")
    assert ana["score softmax"] == "2.0" and ana["score causal_mask"] == "0"
    assert ana["misconceptions"] == "attention:scale-by-dk"
    page = (out / "summary.md").read_text()
    assert "# Part 2 of 3" in page and "`scale-by-dk`" in page.split("# Part 2 of 3")[1]


def test_the_notebook_check_grades_every_part_it_defines(tmp_path: Path) -> None:
    """In a notebook, ``check(assignment=...)`` of a multi-part assignment grades each part the
    kernel defines, in the kernel, and says which part is not written yet."""
    from grader.notebook import grade_parts

    namespace: dict[str, Any] = {}
    for source in ("softmax/correct_basic.py", "attention/scale_by_dk.py"):
        exec(compile((SUBMISSIONS / source).read_text(), str(SUBMISSIONS / source), "exec"),
             namespace)
    report = grade_parts(namespace, _unit(tmp_path))
    validate(report)
    softmax, attention, causal_mask = report["parts"]
    assert softmax["score"] == 2.0
    assert [m["id"] for m in attention["misconceptions"]] == ["scale-by-dk"]
    assert causal_mask["errors"][0]["kind"] == "missing-function"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.e2e
def test_cs231n_transformer_layers_grades_both_classes_of_one_file(tmp_path: Path) -> None:
    from grader import grade

    presets = SUBMISSIONS / "presets"
    path = tmp_path / "transformer_layers.py"
    path.write_text((presets / "cs231n-positional-encoding" / "correct_columns_loop.py")
                    .read_text() + "\n\n" +
                    (presets / "cs231n-multi-head-attention" / "no_output_projection.py")
                    .read_text())
    report = grade(path, assignment="cs231n-transformer-layers")
    encoding, attention = report["parts"]
    assert encoding["score"] == encoding["max_score"] == 10.0
    assert [m["id"] for m in attention["misconceptions"]] == ["missing-output-projection"]
    assert report["max_score"] == 20.0
