"""The command line per SPEC section 3: exit codes, formats, and every report schema-valid."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from grader.core.report import validate

from .conftest import SUBMISSIONS, run_cli

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

CORRECT = SUBMISSIONS / "attention" / "correct_matmul.py"
BUGGY = SUBMISSIONS / "attention" / "combo_dk_inverted.py"


def test_grade_writes_a_valid_json_report() -> None:
    result = run_cli("grade", str(BUGGY))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    validate(report)
    assert report["assignment"] == "attention"
    assert {m["id"] for m in report["misconceptions"]} == {"scale-by-dk", "mask-inverted"}
    assert report["metadata"]["seed"] == 0


def test_all_formats_show_the_same_result(tmp_path: Path) -> None:
    json_report = json.loads(run_cli("grade", str(BUGGY)).stdout)
    text = run_cli("check", str(BUGGY)).stdout
    markdown = run_cli("grade", str(BUGGY), "--format", "markdown").stdout
    gradescope = json.loads(run_cli("grade", str(BUGGY), "-f", "gradescope").stdout)
    github = json.loads(base64.b64decode(run_cli("grade", str(BUGGY), "-f", "github").stdout))
    score = json_report["score"]
    assert f"Score: {score:g} / 10" in text and f"{score:g} / 10" in markdown
    assert gradescope["score"] == score
    assert sum(t["score"] for t in github["tests"]) == pytest.approx(score)
    for mid in ("scale-by-dk", "mask-inverted"):
        assert mid in text and mid in markdown and mid in gradescope["output"]


def test_output_file_and_fail_under(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = run_cli("grade", str(BUGGY), "--output", str(out), "--fail-under", "9")
    assert result.returncode == 1 and result.stdout == ""
    validate(json.loads(out.read_text()))
    assert run_cli("grade", str(CORRECT), "--fail-under", "10").returncode == 0


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    missing = run_cli("grade", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    unknown = run_cli("grade", str(CORRECT), "--assignment", "atention")
    assert unknown.returncode == 2 and "attention" in unknown.stderr
    assert run_cli("explain", "scale-by-dx").returncode == 2


def test_assignments_schema_explain() -> None:
    listing = run_cli("assignments").stdout
    assert "scaled_dot_product_attention(Q, K, V, mask=None)" in listing
    schema = json.loads(run_cli("schema").stdout)
    assert schema["properties"]["schema_version"] == {"const": "1"}
    explained = run_cli("explain", "mask-inverted").stdout
    assert "read the other way round" in explained and "A-edge-6" in explained


def test_hidden_seed_from_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ATTENTION_GRADER_SEED", "777")
    report = json.loads(run_cli("grade", str(CORRECT)).stdout)
    assert report["metadata"]["seed"] == 777 and report["metadata"]["hidden_probes"]
    assert report["score"] == report["max_score"]


def test_batch_grades_each_submission_separately(tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import os\ndef scaled_dot_product_attention(Q, K, V, mask=None):\n"
                     "    os._exit(3)\n")
    out = tmp_path / "out"
    result = run_cli("batch", str(CORRECT), str(BUGGY), str(crash), "--assignment", "attention",
                     "--out", str(out), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    scores = {Path(r["submission"]).name: r["score"] for r in summary}
    assert scores["correct_matmul.py"] == 10.0 and scores["crash.py"] == 0.0
    assert (out / "summary.csv").read_text().count("\n") == 4
    for report in out.glob("*.json"):
        if report.name != "summary.json":
            validate(json.loads(report.read_text()))


def _workers_in(folder: Path) -> set[int]:
    """Live worker interpreters whose run folder is inside ``folder``: this test's own (each
    command below gets a temporary directory of its own), whatever else runs on the machine."""
    import os

    found = set()
    for name in os.listdir("/proc"):
        try:
            command = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(f"/proc/{name}/cwd")
        except (OSError, IndexError):
            continue
        if (b"sandbox/worker.py" in command and state not in ("Z", "X")
                and cwd.startswith(str(folder))):
            found.add(int(name))
    return found


def test_a_worker_started_ahead_is_gone_when_the_command_stops_early(tmp_path: Path) -> None:
    """`grade` and `check` start their worker before reading the command line; a command
    that then stops (a missing file, a bad option) leaves no worker behind."""
    import os
    import subprocess
    import sys

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    for args in (["grade", str(tmp_path / "missing.py")],
                 ["check", str(SUBMISSIONS / "attention" / "correct_matmul.py"), "--no-such"],
                 ["check", str(tmp_path / "notes.txt")]):
        (tmp_path / "notes.txt").write_text("print('ran')\n")
        result = subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True,
                                text=True, timeout=120, env=env)
        assert result.returncode == 2, result.stderr
        assert "ran" not in result.stdout
    assert _workers_in(temporary) == set()
    assert list(temporary.iterdir()) == []


def test_only_py_and_ipynb_files_run_in_any_case(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text((SUBMISSIONS / "attention" / "correct_matmul.py").read_text())
    refused = run_cli("check", str(notes))
    assert refused.returncode == 2 and ".py file nor an .ipynb" in refused.stderr
    upper = tmp_path / "class" / "ann" / "Attention.PY"
    upper.parent.mkdir(parents=True)
    upper.write_text(notes.read_text())
    graded = json.loads(run_cli("grade", str(upper)).stdout)
    assert graded["score"] == graded["max_score"]
    out = tmp_path / "out"
    assert run_cli("batch", str(tmp_path / "class"), "-a", "attention", "--out",
                   str(out)).returncode == 0
    assert json.loads((out / "ann.json").read_text())["score"] == graded["max_score"]


def test_a_graded_submission_exits_with_its_report_written(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = run_cli("grade", str(SUBMISSIONS / "attention" / "scale_by_dk.py"), "-o", str(out))
    assert result.returncode == 0
    assert [m["id"] for m in json.loads(out.read_text())["misconceptions"]] == ["scale-by-dk"]


def test_explain_answers_every_question_bank_item_a_report_cites() -> None:
    """A report says "More on each: attention-grader explain A-err-6": that command answers,
    for every item any misconception cites."""
    from reference.catalogue import CATALOGUE

    cited = sorted({item for row in CATALOGUE for item in row.question_bank})
    for item in cited[:: max(1, len(cited) // 6)]:
        done = run_cli("explain", item)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{item} (question bank): ")
    report = json.loads(run_cli("grade", str(SUBMISSIONS / "attention" / "scale_by_dk.py"),
                                "--format", "json").stdout)
    text = run_cli("check", str(SUBMISSIONS / "attention" / "scale_by_dk.py")).stdout
    first = report["misconceptions"][0]["question_bank"][0]
    assert f"attention-grader explain {first}" in " ".join(text.split())


def test_a_shard_out_of_range_and_a_merge_of_unfinished_shards_are_usage_errors(
        tmp_path: Path) -> None:
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ann.py").write_text(CORRECT.read_text())
    bad = run_cli("batch", str(tmp_path / "class"), "-a", "attention", "--out",
                  str(tmp_path / "out"), "--shard", "4/3")
    assert bad.returncode == 2 and "between 1 and N" in bad.stderr
    (tmp_path / "empty").mkdir()
    unfinished = run_cli("merge", str(tmp_path / "empty"), "--out", str(tmp_path / "merged"))
    assert unfinished.returncode == 2 and "not a finished shard" in unfinished.stderr


def test_batch_shards_and_merge_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "class").mkdir()
    for name in ("ann", "bob", "cat", "dan"):
        (tmp_path / "class" / f"{name}.py").write_text(
            (CORRECT if name in ("ann", "cat") else BUGGY).read_text())
    for k in (1, 2):
        done = run_cli("batch", str(tmp_path / "class"), "-a", "attention", "--out",
                       str(tmp_path / f"s{k}"), "--shard", f"{k}/2")
        assert done.returncode == 0, done.stderr
    merged = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out",
                     str(tmp_path / "all"))
    assert merged.returncode == 0, merged.stderr
    assert "merged 2 shards, 4 submissions" in merged.stdout
    rows = json.loads((tmp_path / "all" / "summary.json").read_text())
    assert [r["student"] for r in rows] == ["ann", "bob", "cat", "dan"]
    assert [r["score"] for r in rows][0] == 10


def test_explain_gives_each_cited_items_point_and_where_the_bank_is() -> None:
    """Reports cite question-bank items (A-err-6, B-11) the repository does not ship: `explain`
    says each one's point in our own words, and where the course keeps the bank."""
    import re

    from click.testing import CliRunner

    from grader.cli import main
    from reference.catalogue import CATALOGUE
    from reference.question_bank import POINTS

    cited = {item for row in CATALOGUE for item in row.question_bank}
    root = Path(__file__).resolve().parents[1]
    for source in [*root.glob("grader/tasks/*.py"), *root.glob("grader/core/*.py")]:
        cited |= set(re.findall(r'"((?:A-(?:tf|err|why|edge)|B)-\d+)"', source.read_text()))
    assert {"A-err-6", "B-11", "B-2"} <= cited
    for item in sorted(cited):
        done = CliRunner().invoke(main, ["explain", item])
        assert done.exit_code == 0, done.output
        shown = " ".join(done.output.split())
        assert POINTS[item] in shown
        assert "INDEX.md" in shown and "not part of this repository" in shown
    bank = Path("/work/shared/question-bank")
    if bank.is_dir():  # (where the bank is at hand) never its text: no run of 7 of its words

        def runs(text: str) -> set[tuple[str, ...]]:
            words = re.findall(r"[a-z0-9]+", text.lower())
            return {tuple(words[i:i + 7]) for i in range(len(words) - 6)}

        theirs = set().union(*(runs(p.read_text()) for p in bank.glob("bank-*.txt")))
        assert not {item: runs(text) & theirs for item, text in POINTS.items()
                    if runs(text) & theirs}
