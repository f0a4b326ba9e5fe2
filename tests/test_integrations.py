"""Where users work: Gradescope, GitHub Classroom, the notebook, pytest and the starter kits.

Each platform's output is checked against that platform's contract (the schemas under
``tests/contracts/`` are written from Gradescope's specs.md and from the reporter's source), and
every view must show the same score and misconceptions as the JSON report.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from grader import registry
from grader.core.scoring import CREDIT_STEP
from grader.notebook import check, grade_function
from grader.platforms import PLATFORMS, RENDERERS, github, gradescope
from grader.registry import rubric
from grader.starter import ACTION_REFERENCE, kit_files

from .conftest import SUBMISSIONS, run_cli
from .platform_contracts import PLATFORM_CONTRACTS

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

HERE = Path(__file__).parent
ROOT = HERE.parent
CONTRACTS = HERE / "contracts"
CORRECT = SUBMISSIONS / "attention" / "correct_matmul.py"
BUGGY = SUBMISSIONS / "attention" / "combo_dk_inverted.py"
VARIED = [
    CORRECT,
    BUGGY,
    SUBMISSIONS / "attention" / "no_batch_support.py",
    SUBMISSIONS / "softmax" / "unstable.py",
    SUBMISSIONS / "multi_head_attention" / "heads_not_split.py",
]


def contract(name: str) -> dict[str, Any]:
    return json.loads((CONTRACTS / name).read_text())


def _base64_json(output: str) -> Any:
    return json.loads(base64.b64decode(output))


def grade_json(path: Path, *extra: str) -> dict[str, Any]:
    result = run_cli("grade", str(path), *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def decoded_github(report: dict[str, Any]) -> dict[str, Any]:
    return _base64_json(github.render(report))


def reporter_numbers(result: dict[str, Any]) -> tuple[Fraction, Fraction]:
    """What autograding-grading-reporter computes: the points sent to Classroom (sum of test
    scores) and the points its log table shows (passing tests / tests * max_score)."""
    tests = result["tests"]
    sent = sum(Fraction(t["score"]).limit_denominator(10_000) for t in tests)
    passing = sum(t["status"] == "pass" for t in tests)
    shown = Fraction(passing, len(tests)) * Fraction(result["max_score"]).limit_denominator(100)
    return sent, shown


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    existing = [p for p in VARIED if p.exists()]
    assert len(existing) == len(VARIED), [p for p in VARIED if not p.exists()]
    broken = tmp_path_factory.mktemp("broken") / "not_python.py"  # JSON, not Python
    broken.write_text((CONTRACTS / "gradescope_results.schema.json").read_text())
    return [grade_json(p) for p in existing] + [grade_json(broken, "--assignment", "attention")]


# --- every platform --------------------------------------------------------------------------

def test_every_platform_has_a_contract() -> None:
    assert {platform.name for platform in PLATFORMS} == set(PLATFORM_CONTRACTS)


@pytest.mark.parametrize("platform", [platform.name for platform in PLATFORMS])
def test_every_platform_result_follows_its_contract(platform: str,
                                                    reports: list[dict[str, Any]]) -> None:
    schema, read, fraction = PLATFORM_CONTRACTS[platform]
    for report in reports:
        result = read(RENDERERS[platform](report))
        jsonschema.validate(result, contract(schema))
        # the same fraction of the points as the JSON report
        expected = Fraction(repr(report["score"])) / Fraction(repr(report["max_score"]))
        assert fraction(result, report["max_score"]) == expected, platform


# --- Gradescope -------------------------------------------------------------------------------

def test_gradescope_results_carry_the_score_and_the_misconceptions(
        reports: list[dict[str, Any]]) -> None:
    for report in reports:
        results = json.loads(gradescope.render(report))
        assert results["score"] == report["score"]
        assert sum(t["score"] for t in results["tests"]) == pytest.approx(report["score"])
        named = {m["id"] for m in report["misconceptions"]}
        tagged = {tag for t in results["tests"] for tag in t.get("tags", [])}
        assert named <= tagged
        for mid in named:
            assert mid in results["output"]
        if report["status"] != "graded":
            assert results["tests"][-1]["status"] == "failed"
            assert report["errors"][0]["kind"] in results["tests"][-1]["tags"]


def test_gradescope_hides_tests_on_hidden_probes() -> None:
    report = grade_json(BUGGY, "--seed", "4242")
    results = json.loads(gradescope.render(report, hidden_visibility="after_due_date"))
    visibility = {t["name"]: t["visibility"] for t in results["tests"]}
    assert visibility["returns-arrays"] == "visible"
    assert visibility["values-2d"] == "after_due_date"
    public = json.loads(gradescope.render(grade_json(BUGGY)))
    assert {t["visibility"] for t in public["tests"]} == {"visible"}
    # the always-visible output names the misconceptions but shows no secret probe values
    assert "scale-by-dk" in results["output"]
    assert "np.array(" not in results["output"] and "probe_inputs(" not in results["output"]
    assert "probe_inputs(" in public["output"]  # (the public inputs, fetched by name)


def _autograder_root(tmp_path: Path, zip_path: Path) -> Path:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        assert "setup.sh" in names and "run_autograder" in names  # at the zip's root
        archive.extractall(root / "source")
    (root / "run_autograder").write_text((root / "source" / "run_autograder").read_text())
    (root / "submission").mkdir()
    return root


def _run_autograder(root: Path, python: str = sys.executable) -> dict[str, Any]:
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": python}
    done = subprocess.run(["bash", str(root / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, contract("gradescope_results.schema.json"))
    return results


def test_autograder_zip_grades_like_the_cli(tmp_path: Path) -> None:
    zip_path = tmp_path / "autograder.zip"
    built = run_cli("gradescope-zip", "attention", "--output", str(zip_path), "--seed", "99")
    assert built.returncode == 0, built.stderr
    root = _autograder_root(tmp_path, zip_path)
    bundle = root / "source" / "attention-grader"
    assert (bundle / "pyproject.toml").is_file() and (bundle / "grader" / "pipeline.py").is_file()
    assert (bundle / "assignments" / "attention" / "rubric.json").is_file()
    assert (bundle / "assignments" / "attention" / "assignment.toml").is_file()
    assert json.loads((root / "source" / "autograder.json").read_text())["seed"] == 99

    (root / "submission" / "notes.txt").write_text("my answer is in the .py")
    (root / "submission" / "attention.py").write_text(BUGGY.read_text())
    buggy = _run_autograder(root)
    expected = grade_json(BUGGY, "--seed", "99")
    assert buggy["score"] == expected["score"] < 10
    assert {"scale-by-dk", "mask-inverted"} <= {tag for t in buggy["tests"] for tag in t["tags"]}
    assert "after_published" in {t["visibility"] for t in buggy["tests"]}

    (root / "submission" / "attention.py").write_text(CORRECT.read_text())
    assert _run_autograder(root)["score"] == 10
    # the secret seed is root's alone, whatever the isolation layers available
    assert (root / "source" / "autograder.json").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("name", ["my-course/attention", "course/rope"])
def test_a_course_folder_named_like_a_built_in_is_graded_as_itself_in_the_bundle(
        tmp_path: Path, name: str) -> None:
    """The README's own `my-course/attention` (its ID the folder's name, `attention`) was
    replaced by the built-in inside the zip: correct code scored 10/10 locally and 0/10 there."""
    from tests.test_platforms import _course_folder

    source = "rope" if name.endswith("rope") else "attention"
    function = {"attention": "scaled_dot_product_attention", "rope": "rope"}[source]
    folder = _course_folder(tmp_path / name, source=source, function="course_" + function,
                            signature=f"course_{function}(...)")
    fixture = SUBMISSIONS / source / ("correct_matmul.py" if source == "attention" else
                                      "correct_slices.py")
    work = tmp_path / "work.py"
    work.write_text(fixture.read_text().replace(f"def {function}(", f"def course_{function}("))
    local = grade_json(work, "--assignment", str(folder), "--seed", "5")
    assert local["score"] == local["max_score"] == rubric(str(folder))["max_score"]
    zip_path = tmp_path / "autograder.zip"
    built = run_cli("gradescope-zip", str(folder), "--output", str(zip_path), "--seed", "5")
    assert built.returncode == 0, built.stderr
    root = _autograder_root(tmp_path, zip_path)
    (root / "submission" / "work.py").write_text(work.read_text())
    assert _run_autograder(root)["score"] == local["score"]


@pytest.mark.parametrize("preset,framework", [("cs231n-multi-head-attention", "torch"),
                                              ("coursera-dls-attention", "tensorflow"),
                                              ("attention", None)])
def test_the_framework_a_course_names_is_installed_where_it_is_graded(
        tmp_path: Path, preset: str, framework: str | None) -> None:
    """A torch course's bundle installs torch (its correct code once scored 0 on Gradescope,
    told torch was missing), and so does its Classroom workflow; a version given by the
    instructor is kept, not doubled."""
    from grader.starter import kit_files

    zip_path = tmp_path / "autograder.zip"
    assert run_cli("gradescope-zip", preset, "-o", str(zip_path)).returncode == 0
    setup = zipfile.ZipFile(zip_path).read("setup.sh").decode()
    workflow = kit_files(preset)[".github/workflows/classroom.yml"]
    if framework is None:
        assert "pip install ./attention-grader" in setup and "torch" not in setup
        assert "packages:" not in workflow
        return
    assert setup.rstrip().endswith(f"pip install {framework}")
    assert f"packages: {framework}" in workflow
    pinned = tmp_path / "pinned.zip"
    assert run_cli("gradescope-zip", preset, "-o", str(pinned), "--package",
                   f"{framework}==9.9").returncode == 0
    setup = zipfile.ZipFile(pinned).read("setup.sh").decode()
    assert setup.rstrip().endswith(f"pip install {framework}==9.9")


def test_a_missing_package_is_visible_under_hidden_probes() -> None:
    from grader.model import GraderError
    from grader.pipeline import error_report

    report = error_report("attention", [GraderError(
        "missing-dependency", "`import torch` failed: `torch` is not installed")],
        {"submission": "a.py", "seed": 99, "hidden_probes": True})
    results = json.loads(RENDERERS["gradescope"](report, hidden_visibility="after_published"))
    assert "`torch` is not installed" in results["output"]


def test_autograder_setup_installs_the_extra_packages(tmp_path: Path) -> None:
    zip_path = tmp_path / "autograder.zip"
    built = run_cli("gradescope-zip", "attention", "-o", str(zip_path), "--package", "scipy",
                    "--package", "torch==2.13.0")
    assert built.returncode == 0, built.stderr
    setup = zipfile.ZipFile(zip_path).read("setup.sh").decode()
    assert "pip install ./attention-grader" in setup
    assert "chmod -R go-rwx /autograder/source" in setup  # the grader and the seed are root's
    assert setup.rstrip().endswith("pip install scipy torch==2.13.0")
    check_syntax = subprocess.run(["bash", "-n"], input=setup, text=True, capture_output=True)
    assert check_syntax.returncode == 0, check_syntax.stderr


def test_autograder_always_writes_results(tmp_path: Path) -> None:
    zip_path = tmp_path / "autograder.zip"
    assert run_cli("gradescope-zip", "softmax", "-o", str(zip_path)).returncode == 0
    root = _autograder_root(tmp_path, zip_path)
    empty = _run_autograder(root)
    assert empty["score"] == 0 and "No `.py` file" in empty["output"]
    (root / "submission" / "softmax.py").write_text("def softmax(x, axis=-1):\n    return x\n")
    broken_python = _run_autograder(root, python="/bin/false")
    assert broken_python["score"] == 0 and "could not start" in broken_python["output"]


def test_bundled_grader_is_an_installable_project(tmp_path: Path) -> None:
    """What setup.sh does on Gradescope: pip builds the bundled copy (fetching its build backend
    from the package index, as there)."""
    zip_path = tmp_path / "autograder.zip"
    assert run_cli("gradescope-zip", "attention", "-o", str(zip_path)).returncode == 0
    root = _autograder_root(tmp_path, zip_path)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "-q", "-w", str(tmp_path / "wheels"),
                            str(root / "source" / "attention-grader")],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "wheels").glob("attention_grader-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "grader/_assignments/attention/rubric.json" in names
    assert "grader/sandbox/worker.py" in names and "reference/catalogue.py" in names


# --- GitHub Classroom -------------------------------------------------------------------------

def test_github_result_keeps_both_reporter_numbers_equal(reports: list[dict[str, Any]]) -> None:
    for report in reports:
        result = decoded_github(report)
        assert result["max_score"] == report["max_score"]
        sent, shown = reporter_numbers(result)
        assert sent == shown == Fraction(report["score"]).limit_denominator(10_000), report[
            "metadata"].get("submission")
        expected_status = ("error" if report["status"] != "graded" else
                           "pass" if report["score"] == report["max_score"] else "fail")
        assert result["status"] == expected_status


def test_partial_credit_keeps_both_reporter_numbers_equal() -> None:
    checks = [{"id": "a", "points": 1.2, "max_points": 1.9, "passed": False, "message": "m"},
              {"id": "b", "points": 0.3, "max_points": 0.3, "passed": True, "message": ""},
              {"id": "c", "points": 0.0, "max_points": 7.8, "passed": False, "message": "x"}]
    report = {"status": "graded", "score": 1.5, "max_score": 10.0, "checks": checks,
              "errors": [], "misconceptions": [], "metadata": {"submission": "s.py"}}
    sent, shown = reporter_numbers(decoded_github(report))
    assert sent == shown == Fraction(3, 2)


def _action() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def test_action_declares_its_inputs_and_output() -> None:
    action = _action()
    assert set(action["inputs"]) == {"submission", "assignment", "seed", "python-version",
                                     "packages", "unsafe-no-fs-isolation"}
    assert action["inputs"]["submission"]["required"] is True
    assert action["outputs"]["result"]["value"] == "${{ steps.grade.outputs.result }}"
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        if "run" in step:  # inputs reach the shell only through env, never pasted into code
            assert "${{" not in step["run"]


def _run_action_step(tmp_path: Path, inputs: dict[str, str], cwd: Path = ROOT
                     ) -> tuple[dict[str, str], str, str]:
    """Run the action's grading step as the runner would (in the repository ``cwd``), with
    temporary output files."""
    action = _action()
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "grade")
    values = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    values.update(inputs)
    env = dict(os.environ)
    for key, template in step.get("env", {}).items():
        name = template.removeprefix("${{ inputs.").removesuffix(" }}")
        env[key] = values[name]
    output, summary = tmp_path / "github_output", tmp_path / "step_summary"
    env.update(GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    done = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return outputs, summary.read_text(), done.stdout


def test_action_step_sets_result_and_summary(tmp_path: Path) -> None:
    submission = str(BUGGY.relative_to(ROOT))
    outputs, summary, log = _run_action_step(tmp_path, {"submission": submission})
    result = json.loads(base64.b64decode(outputs["result"]))
    jsonschema.validate(result, contract("classroom_result.schema.json"))
    expected = grade_json(BUGGY)
    assert reporter_numbers(result)[0] == Fraction(expected["score"]).limit_denominator(10_000)
    for mid in ("scale-by-dk", "mask-inverted"):
        assert mid in summary and mid in log
    assert f"Score: {expected['score']:g} / 10" in summary


def test_action_step_reports_a_wrong_path_and_seed(tmp_path: Path) -> None:
    outputs, summary, _ = _run_action_step(tmp_path, {"submission": "nope.ipynb",
                                                       "assignment": "attention"})
    result = json.loads(base64.b64decode(outputs["result"]))
    assert result["status"] == "error" and "nope.ipynb" in summary
    outputs, _, _ = _run_action_step(tmp_path, {"submission": str(CORRECT.relative_to(ROOT)),
                                                "seed": "31337"})
    result = json.loads(base64.b64decode(outputs["result"]))
    assert result["status"] == "pass"


def test_action_step_grades_with_a_course_folder_from_the_repository(tmp_path: Path) -> None:
    """`assignment:` may be a course's own folder in the student's repository."""
    pytest.importorskip("torch")  # the preset's fixture is PyTorch code
    folder = tmp_path / "course"
    done = run_cli("new-assignment", "--from", "annotated-transformer-attention",
                   "--out", str(folder))
    assert done.returncode == 0, done.stderr
    work = tmp_path / "attention.py"
    work.write_text((ROOT / "tests" / "submissions" / "presets" / "annotated-transformer-attention"
                     / "scale_by_dk.py").read_text())
    outputs, summary, _ = _run_action_step(tmp_path, {"submission": str(work),
                                                       "assignment": str(folder)})
    result = json.loads(base64.b64decode(outputs["result"]))
    jsonschema.validate(result, contract("classroom_result.schema.json"))
    assert "scale-by-dk" in summary


def _solve_kit_notebook(path: Path, function: str, solution: str) -> None:
    """What a student does: replace the stub's body in the kit's notebook with their code."""
    document = json.loads(path.read_text())
    stub = next(cell for cell in document["cells"]
                if "NotImplementedError" in "".join(cell["source"]))
    stub["source"] = solution.replace("# expect:\n", "").splitlines(True)
    assert f"def {function}(" in "".join(stub["source"])
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("written", ["relative", "absolute"])
def test_a_course_folders_kit_grades_its_own_assignment_on_every_push(
        tmp_path: Path, written: str) -> None:
    """`starter course/rope` once wrote a workflow naming the built-in `rope` and a notebook
    path the kit did not have (every push scored 0), and, given an absolute path, wrote
    `course/rope.py` over the teacher's own. The kit's workflow is run here as the action runs
    it, in a copy of the kit."""
    from tests.test_platforms import _course_folder

    teacher = tmp_path / "teacher"
    folder = _course_folder(teacher / "course" / "rope", source="rope", function="rotate",
                            signature="rotate(x, positions=None, theta=10000.0)")
    own = teacher / "course" / "rope.py"
    own.write_text("# the teacher's own solution\n")
    before = sorted(p for p in tmp_path.rglob("*"))
    kit = tmp_path / "kit"
    reference = "course/rope" if written == "relative" else str(folder)
    done = subprocess.run([sys.executable, "-m", "grader", "starter", reference, "--out",
                           str(kit)], cwd=teacher, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert own.read_text() == "# the teacher's own solution\n"
    assert [p for p in sorted(tmp_path.rglob("*")) if not p.is_relative_to(kit)] == before

    workflow = yaml.safe_load((kit / ".github" / "workflows" / "classroom.yml").read_text())
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    grade_step = next(s for s in steps if s.get("uses") == ACTION_REFERENCE)
    repository = tmp_path / "repository"
    shutil.copytree(kit, repository)
    notebook_path = repository / grade_step["with"]["submission"]
    solution = (SUBMISSIONS / "rope" / "correct_slices.py").read_text()
    _solve_kit_notebook(notebook_path, "rotate", solution.replace("def rope(", "def rotate("))
    outputs, summary, _ = _run_action_step(tmp_path, dict(grade_step["with"]), cwd=repository)
    result = json.loads(base64.b64decode(outputs["result"]))
    assert result["status"] == "pass", summary
    assert reporter_numbers(result)[0] == rubric(str(folder))["max_score"]


def test_submission_cannot_forge_gradescope_results(tmp_path: Path) -> None:
    """The 2019 Gradescope exploits: write results.json during grading, and rewrite the rest of
    run_autograder, which bash reads only when it gets there, after the grader returns. Neither
    changes the score."""
    zip_path = tmp_path / "autograder.zip"
    assert run_cli("gradescope-zip", "attention", "-o", str(zip_path), "--seed", "7").returncode == 0
    root = _autograder_root(tmp_path, zip_path)
    results_file = root / "results" / "results.json"
    forged = '{"score": 999, "tests": []}'
    tail = f"echo '{forged}' > {results_file}\nexit 0\n"
    attack = textwrap.dedent(f"""\
        import os
        try:
            script = {str(root / "run_autograder")!r}
            text = open(script).read()
            cut = text.index("\\n", text.index("grader.platforms.gradescope run")) + 1
            open(script, "w").write(text[:cut] + {tail!r})
        except OSError:
            print("script out of reach")
        try:
            os.makedirs({str(results_file.parent)!r}, exist_ok=True)
            open({str(results_file)!r}, "w").write({forged!r})
        except OSError:
            print("results out of reach")
        """)
    (root / "submission" / "attention.py").write_text(attack + BUGGY.read_text())
    results = _run_autograder(root)
    # with filesystem isolation the submission cannot even see these files; without it (an old
    # kernel, --unsafe-no-fs-isolation) it rewrites them, and the score is the real one anyway
    assert "999" not in (root / "run_autograder").read_text()
    assert results["score"] == grade_json(BUGGY, "--seed", "7")["score"] < 10


@pytest.mark.parametrize("assignment", list(registry.builtins()))
def test_classroom_workflow_wires_the_action_to_the_reporter(assignment: str) -> None:
    files = kit_files(assignment)
    workflow = yaml.safe_load(files[".github/workflows/classroom.yml"])
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    grade_step = next(s for s in steps if s.get("uses") == ACTION_REFERENCE)
    assert grade_step["with"]["submission"] in files
    assert grade_step["with"]["assignment"] == assignment
    reporter = next(s for s in steps if "autograding-grading-reporter" in s.get("uses", ""))
    runner = reporter["with"]["runners"]
    variable = f"{runner.upper()}_RESULTS"  # how the reporter finds each runner's result
    assert reporter["env"][variable] == f"${{{{ steps.{grade_step['id']}.outputs.result }}}}"


# --- the notebook self-check ------------------------------------------------------------------

def _function_from(path: Path, name: str) -> Any:
    namespace: dict[str, Any] = {"__name__": "student"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # our own fixture files
    return namespace[name]


@pytest.mark.parametrize("path", VARIED, ids=lambda p: p.stem)
def test_notebook_check_matches_the_cli(path: Path) -> None:
    cli = grade_json(path)
    function = _function_from(path, cli["metadata"]["function"])
    report = grade_function(function, cli["assignment"])
    assert report["score"] == cli["score"]
    assert [m["id"] for m in report["misconceptions"]] == [m["id"] for m in cli["misconceptions"]]
    assert [c["passed"] for c in report["checks"]] == [c["passed"] for c in cli["checks"]]


def test_notebook_check_finds_the_function_and_shows_feedback(capsys) -> None:
    scaled_dot_product_attention = _function_from(BUGGY, "scaled_dot_product_attention")
    feedback = check("attention", display=False)
    assert feedback is not None and set(feedback.misconceptions) == {"scale-by-dk",
                                                                      "mask-inverted"}
    assert "<code>scale-by-dk</code>" in feedback._repr_html_()
    shown = check(scaled_dot_product_attention)  # shown, and returned
    assert "scale-by-dk" in capsys.readouterr().out
    assert shown.misconceptions == feedback.misconceptions and not shown.passed
    assert shown.max_score == 10 and [c["id"] for c in shown.checks][0] == "returns-arrays"
    assert repr(shown) == ("<Feedback attention: 3.7 / 10, misconceptions: scale-by-dk, "
                           "mask-inverted>")
    assert "scale-by-dk" in str(shown) and shown.report["score"] == 3.7
    with pytest.raises(NameError, match="softmax"):
        check("softmax")
    inferred = check(display=False)  # the assignment function defined here
    assert inferred is not None and inferred.score == feedback.score


# --- pytest -----------------------------------------------------------------------------------

def _pytest_on(tmp_path: Path, submission: Path, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--attention-submission", str(submission), *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_pytest_plugin_turns_checks_into_tests(tmp_path: Path) -> None:
    buggy = _pytest_on(tmp_path, BUGGY, "-rf")
    assert buggy.returncode == 1, buggy.stdout + buggy.stderr
    report = grade_json(BUGGY)
    failed = [c["id"] for c in report["checks"] if not c["passed"]]
    for check_id in failed:
        assert f"::{check_id}" in buggy.stdout
    assert f"{len(failed)} failed, {len(report['checks']) - len(failed)} passed" in buggy.stdout
    assert "scale-by-dk" in buggy.stdout and "mask-inverted" in buggy.stdout
    correct = _pytest_on(tmp_path, CORRECT, "--attention-assignment", "attention")
    assert correct.returncode == 0 and f"{len(report['checks'])} passed" in correct.stdout


def test_pytest_plugin_reads_its_settings_from_the_ini_file(tmp_path: Path) -> None:
    (tmp_path / "attention.py").write_text(BUGGY.read_text())
    (tmp_path / "pytest.ini").write_text("[pytest]\nattention_submission = attention.py\n"
                                         "attention_assignment = attention\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "attention.py::values-masked" in done.stdout


def test_pytest_plugin_reports_a_malformed_frame_as_the_submissions_crash(
        tmp_path: Path) -> None:
    """A result frame nested 600 000 deep: the submission's failure, never INTERNALERROR."""
    forged = tmp_path / "forged" / "attention.py"
    forged.parent.mkdir()
    forged.write_text(
        "import gc, os, struct\n"
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    channel = next(o for o in gc.get_objects()\n"
        "                   if type(o).__name__ == 'Channel' and hasattr(o, 'nonce'))\n"
        "    payload = ('[' * 600_000).encode()\n"
        "    os.write(channel.fd, struct.pack('<4sIQ', b'AGF1', len(payload), 0) + payload)\n"
        "    os._exit(0)\n")
    done = _pytest_on(tmp_path, forged, "--attention-assignment", "attention", "-rf")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr and "crashed" in done.stdout


def test_pytest_plugin_rejects_a_bad_assignment(tmp_path: Path) -> None:
    done = _pytest_on(tmp_path, CORRECT, "--attention-assignment", "atention")
    assert done.returncode == 4 and "unknown assignment" in done.stderr


# --- starter kits and the five views ----------------------------------------------------------

@pytest.mark.parametrize("assignment", list(registry.builtins()))
def test_starter_kit_is_current_and_its_stubs_say_not_implemented(assignment: str) -> None:
    kit = ROOT / "assignments" / assignment / "starter"
    for relative, text in kit_files(assignment).items():
        assert (kit / relative).read_text() == text, (
            f"{kit / relative} is stale: run `attention-grader starter {assignment} --out {kit}`")
    for stub in (kit / f"{assignment}.ipynb", kit / f"{assignment}.py"):
        report = grade_json(stub)
        assert report["assignment"] == assignment and report["status"] == "error"
        assert report["misconceptions"] == [] and len(report["errors"]) == 1
        assert "not implemented yet" in report["errors"][0]["message"]


def test_every_view_shows_the_same_score_and_misconceptions() -> None:
    report = grade_json(BUGGY)
    score, ids = report["score"], [m["id"] for m in report["misconceptions"]]
    views = {fmt: run_cli("grade", str(BUGGY), "--format", fmt).stdout for fmt in RENDERERS}
    assert json.loads(views["json"])["score"] == score
    assert f"Score: {score:g} / 10" in views["text"] and f"{score:g} / 10" in views["markdown"]
    assert f"Score: {score:g} / 10" in views["html"]
    assert json.loads(views["gradescope"])["score"] == score
    assert reporter_numbers(json.loads(base64.b64decode(views["github"])))[0] == Fraction(
        score).limit_denominator(10_000)
    for mid in ids:
        for fmt in ("text", "markdown", "html"):
            assert mid in views[fmt], fmt
        assert mid in json.loads(views["gradescope"])["output"]


@pytest.mark.parametrize("assignment", list(registry.builtins()))
def test_notebook_check_on_the_starter_stub_says_not_implemented(assignment: str) -> None:
    namespace: dict[str, Any] = {}
    exec(kit_files(assignment)[f"{assignment}.py"], namespace)  # noqa: S102 - our own stub
    function = namespace[registry.get(assignment).function]
    feedback = check(function, display=False)
    assert feedback is not None and feedback.score == 0 and feedback.misconceptions == []
    assert "not implemented yet" in feedback.report["errors"][0]["message"]


def test_rubric_points_come_in_whole_credit_steps() -> None:
    """The GitHub view spells the score out in equal units; odd weights would blow it up."""
    for assignment in registry.ids():
        for item in rubric(assignment)["checks"]:
            steps = item["points"] / CREDIT_STEP
            assert abs(steps - round(steps)) < 1e-9, (assignment, item["id"])


def test_notebook_check_shows_html_inside_jupyter(monkeypatch) -> None:
    """Inside a Jupyter kernel (stood in for by a minimal IPython module) the feedback is
    displayed as HTML; no IPython is needed to run this test."""
    import types

    shown: list[Any] = []

    class Shell:
        config = {"IPKernelApp": {}}

    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: Shell()  # type: ignore[attr-defined]
    display = types.ModuleType("IPython.display")
    display.HTML = lambda text: ("html", text)  # type: ignore[attr-defined]
    display.display = lambda bundle, raw=False: shown.append((bundle, raw))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    feedback = check(_function_from(BUGGY, "scaled_dot_product_attention"))
    assert len(shown) == 1 and shown[0][1] is True  # one bundle, shown as it is
    html, plain = shown[0][0]["text/html"], shown[0][0]["text/plain"]
    assert "<code>scale-by-dk</code>" in html and "Score: 3.7 / 10" in html
    assert "Score: 3.7 / 10" in plain and "<" not in plain.splitlines()[1]
    feedback._ipython_display_()  # as the cell's last value: shown once already, not twice
    assert len(shown) == 1
    feedback._ipython_display_()  # asked for again later: shown
    assert len(shown) == 2


def test_notebook_check_needs_nothing_unix_only() -> None:
    """Students run the notebook check on their own machines, Windows included: it must not
    need the Unix-only modules the sandbox uses (`resource`, here made unimportable)."""
    script = (
        "import sys\nsys.modules['resource'] = None\nsys.modules['fcntl'] = None\n"
        "import numpy as np\nfrom grader import check\n"
        "def softmax(x, axis=-1):\n"
        "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
        "    return e / e.sum(axis=axis, keepdims=True)\n"
        "print(check(softmax, display=False).score)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "10.0"


# --- the platforms' entry points, as each platform runs them ------------------------------------

def _module(name: str, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"grader.platforms.{name}", *args],
                          capture_output=True, text=True, timeout=120, **options)


def _expected_fraction(path: Path, seed: int) -> Fraction:
    report = grade_json(path, "--seed", str(seed))
    return Fraction(repr(report["score"])) / Fraction(repr(report["max_score"]))


def test_prairielearn_job_grades_the_students_files(tmp_path: Path) -> None:
    root = tmp_path / "grade"
    (root / "tests").mkdir(parents=True)
    (root / "student").mkdir()
    (root / "tests" / "attention-grader.json").write_text('{"assignment": "attention", '
                                                          '"seed": 4242}')
    for source, gradable in ((BUGGY, True), (CORRECT, True), (None, False)):
        if source is not None:
            (root / "student" / "attention.py").write_text(source.read_text())
        else:
            (root / "student" / "attention.py").write_text("def broken(:\n")
        done = _module("prairielearn", "--root", str(root))
        assert done.returncode == 0, done.stderr
        results = json.loads((root / "results" / "results.json").read_text())
        jsonschema.validate(results, contract("prairielearn_results.schema.json"))
        assert results["gradable"] is gradable
        if source is not None:
            assert Fraction(repr(results["score"])) == _expected_fraction(source, 4242)


def test_autolab_lab_grades_the_handin_with_make(tmp_path: Path) -> None:
    deploy = ROOT / "deploy" / "autolab"
    lab = tmp_path / "lab"
    lab.mkdir()
    shutil.copy(deploy / "Makefile", lab / "Makefile")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    built = subprocess.run(["make", "-s", "SEED=99"], cwd=lab, capture_output=True, text=True,
                           env=env)
    assert built.returncode == 0, built.stderr
    box = tmp_path / "box"  # what Autolab's autograding instance holds
    box.mkdir()
    shutil.copy(lab / "autograde.tar", box)
    shutil.copy(deploy / "autograde-Makefile", box / "Makefile")
    (box / "attention.py").write_text(BUGGY.read_text())
    done = subprocess.run(["make", "-s"], cwd=box, capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    read = PLATFORM_CONTRACTS["autolab"].read(done.stdout)
    jsonschema.validate(read, contract("autolab_autoresult.schema.json"))
    expected = grade_json(BUGGY, "--seed", "99")
    assert sum(read["autoresult"]["scores"].values()) == pytest.approx(expected["score"])


def test_coursera_grader_writes_feedback_for_the_part(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "submission").mkdir(parents=True)
    (shared / "submission" / "attention.py").write_text(BUGGY.read_text())
    settings = tmp_path / "settings.json"
    settings.write_text('{"parts": {"Xy12": "attention"}, "seed": 77}')
    done = _module("coursera", "--shared", str(shared), "--settings", str(settings),
                   env={**os.environ, "partId": "Xy12"})
    assert done.returncode == 0, done.stderr
    feedback = json.loads((shared / "feedback.json").read_text())
    jsonschema.validate(feedback, contract("coursera_feedback.schema.json"))
    assert Fraction(repr(feedback["fractionalScore"])) == _expected_fraction(BUGGY, 77)


def test_codegrade_points_go_to_the_structured_output(tmp_path: Path) -> None:
    structured = tmp_path / "fd3"
    done = subprocess.run(["bash", "-c", '"$0" -m grader.platforms.codegrade "$1" 3>"$2"',
                           sys.executable, str(BUGGY), str(structured)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    points = json.loads(structured.read_text())
    jsonschema.validate(points, contract("codegrade_points.schema.json"))
    assert Fraction(points["points"]) == _expected_fraction(BUGGY, 0)
    assert '"tag"' not in done.stdout and "Score:" in done.stdout  # the feedback on stdout
