"""The registry of formats, the student view every secret-keeping platform shows, and the
Gradescope bundle's description of itself: all without running a submission."""

from __future__ import annotations

import copy
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from grader.core.report import validate
from grader.platforms import (
    FORMATS,
    PLATFORMS,
    RENDERERS,
    autolab,
    codegrade,
    coderunner,
    gradescope,
    junit,
    prairielearn,
)
from grader.render.outcome import problems
from grader.render.verdict import unexplained
from grader.render.visible import HIDDEN_DETAIL, LOADING_ERRORS, student_view

from .platform_contracts import PLATFORM_CONTRACTS, contract, xml_tree

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "assignments" / "attention" / "example_class" / "reports"


def _report(student: str) -> dict[str, Any]:
    return json.loads((REPORTS / f"{student}.json").read_text())


def _on_hidden_probes(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` as the pipeline writes it under a hidden seed (``pipeline.grade``)."""
    hidden = copy.deepcopy(report)
    hidden["metadata"]["hidden_probes"] = True
    for check in hidden["checks"]:
        check["hidden"] = check["category"] != "interface" or not check["passed"]
    return hidden


def test_a_report_on_public_probes_is_its_own_student_view() -> None:
    report = _report("bruno")
    assert student_view(report) is report


def test_the_student_view_withholds_what_hidden_probes_show() -> None:
    report = _on_hidden_probes(_report("jonas"))  # misconceptions and a runtime error
    report["errors"].append({"kind": "syntax-error", "message": "line 3: invalid syntax"})
    report["located"] = {"stage": "scores", "message": "The scores go wrong: at index (0, 1): "
                         "yours 0.5, expected 0.25."}
    before = copy.deepcopy(report)
    view = student_view(report)
    assert report == before  # pure
    validate(view)
    assert report["misconceptions"] and all(m["evidence"] == "" for m in view["misconceptions"])
    assert {c["message"] for c in view["checks"] if c["hidden"]} == {HIDDEN_DETAIL}
    assert [c["message"] for c in view["checks"] if not c["hidden"]] == [
        c["message"] for c in report["checks"] if not c["hidden"]]
    for error, shown in zip(report["errors"], view["errors"]):
        kept = error["kind"] in LOADING_ERRORS
        assert shown["message"] == (error["message"] if kept else HIDDEN_DETAIL), error["kind"]
    assert view["located"]["message"] == "The scores go wrong."


@pytest.mark.parametrize("failure", ["the call failed (runtime-error; see the errors)",
                                     "0 / 4 test inputs give the right answer"])
def test_the_student_view_keeps_the_verdict_its_withheld_messages_decided(failure: str) -> None:
    report = _on_hidden_probes(_report("ines"))
    report["misconceptions"] = []
    for check in report["checks"]:
        check["message"] = failure if not check["passed"] else check["message"]
    assert unexplained(student_view(report)) == unexplained(report) is not None


def test_the_command_line_offers_every_format_of_the_registry() -> None:
    from grader.cli import grade

    choices = next(p for p in grade.params if p.name == "fmt").type.choices
    assert list(choices) == list(FORMATS) == list(RENDERERS)
    assert {"json", "text", "markdown", "html", "gradescope", "github"} <= set(FORMATS)
    assert all(FORMATS[platform.name] is platform for platform in PLATFORMS)


def test_only_the_report_itself_is_for_staff_alone() -> None:
    assert [name for name, fmt in FORMATS.items() if not fmt.student_visible] == ["json"]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_bundle_describes_itself_as_the_project_does(tmp_path: Path) -> None:
    """The bundled copy installs the project's packages with the project's requirements (the
    bundle once carried a hand-kept copy of both)."""
    gradescope.write_bundle(tmp_path)
    bundled = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    project = _pyproject()
    assert bundled["project"]["dependencies"] == project["project"]["dependencies"]
    assert sorted(bundled["tool"]["setuptools"]["packages"]) == sorted(
        project["tool"]["setuptools"]["packages"])


def test_an_installed_grader_bundles_the_requirements_it_was_installed_with(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without a source tree (a wheel), the requirements come from the installed metadata,
    which says what pyproject.toml says."""
    monkeypatch.setattr(gradescope, "SOURCE_PYPROJECT", tmp_path / "absent.toml")

    def spelled(requirement: str) -> str:
        return requirement.replace("'", '"').replace(" ", "")

    assert [spelled(r) for r in gradescope.requirements()] == [
        spelled(r) for r in _pyproject()["project"]["dependencies"]]


# --- every platform's result, from reports of the example class (no submission runs) ----------

#: a correct submission, buggy ones (one with errors that cost marks), one that ran and failed,
#: one that does not parse
CLASS_REPORTS = ("amara", "dara", "jonas", "milo", "nadia")


def _exact(value: float) -> Fraction:
    return Fraction(repr(float(value)))


@pytest.mark.parametrize("platform", [platform.name for platform in PLATFORMS])
@pytest.mark.parametrize("student", CLASS_REPORTS)
@pytest.mark.parametrize("hidden", [False, True])
def test_every_platform_follows_its_contract_with_the_fraction_of_the_report(
        platform: str, student: str, hidden: bool) -> None:
    report = _report(student)
    report = _on_hidden_probes(report) if hidden else report
    schema, read, fraction = PLATFORM_CONTRACTS[platform]
    result = read(RENDERERS[platform](report))
    jsonschema.validate(result, contract(schema))
    assert fraction(result, report["max_score"]) == _exact(report["score"]) / _exact(
        report["max_score"])


def test_every_platform_has_a_contract_and_a_test_here() -> None:
    assert {platform.name for platform in PLATFORMS} == set(PLATFORM_CONTRACTS)
    assert {"prairielearn", "autolab", "coderunner", "codegrade", "coursera",
            "junit"} <= set(FORMATS)


def test_prairielearn_charges_no_attempt_for_what_is_no_attempt() -> None:
    unparsable = json.loads(prairielearn.render(_report("nadia")))  # syntax error
    assert unparsable["gradable"] is False and "score" not in unparsable
    assert unparsable["format_errors"][0].startswith("syntax-error: ")
    failed = json.loads(prairielearn.render(_report("milo")))  # it ran, and raised
    assert failed["gradable"] is True and failed["score"] == 0
    assert failed["tests"][-1]["name"] == "submission could be graded"
    buggy = json.loads(prairielearn.render(_report("dara")))
    assert [t["name"] for t in buggy["tests"]] == [c["id"] for c in _report("dara")["checks"]]
    assert sum(t["points"] for t in buggy["tests"]) == pytest.approx(_report("dara")["score"])


def test_autolab_scores_every_problem_of_the_rubric_and_sums_to_the_score() -> None:
    from grader.registry import rubric

    names = [item["id"] for item in rubric("attention")["checks"]]
    for student in ("amara", "dara", "nadia"):
        report = _report(student)
        output = autolab.render(report)
        scores = autolab.autoresult(output)["scores"]
        assert list(scores) == names
        assert sum(scores.values()) == pytest.approx(report["score"])
        lines = output.rstrip("\n").splitlines()
        assert json.loads(lines[-2])["_presentation"] == "semantic"  # the line before the last


def test_a_multi_part_report_scores_by_part_on_a_platform_that_scores_by_problem() -> None:
    report = copy.deepcopy(_report("dara"))
    report["parts"] = [
        {"assignment": "softmax", "function": "softmax", "status": "graded", "score": 2.0,
         "max_score": 4.0, "misconceptions": [], "checks": [], "errors": []},
        {"assignment": "attention", "function": "scaled_dot_product_attention",
         "status": "graded", "score": 1.7, "max_score": 6.0, "misconceptions": [],
         "checks": [], "errors": []}]
    for check in report["checks"]:
        check["part"] = "attention"
    first = report["checks"][0]  # one ID in two parts, the points split between them
    first.update(points=first["points"] / 2, max_points=first["max_points"] / 2)
    report["checks"].append({**first, "part": "softmax"})
    for part in report["parts"]:  # (as a graded report holds them: each part's own too)
        part["checks"] = [c for c in report["checks"] if c["part"] == part["assignment"]]
    assert autolab.scores(report) == {"softmax": 2, "attention": 1.7}
    assert [p.name for p in problems(report)] == ["softmax", "attention"]
    for platform in PLATFORMS:  # every platform still reads it, with the same fraction
        schema, read, fraction = PLATFORM_CONTRACTS[platform.name]
        result = read(platform.render(report))
        jsonschema.validate(result, contract(schema))
        assert fraction(result, report["max_score"]) == _exact(report["score"]) / 10
    semantic = json.loads(autolab.render(report).rstrip("\n").splitlines()[-2])["Checks"]
    assert {"softmax: returns-arrays", "attention: returns-arrays"} <= set(semantic)
    names = [t["name"] for t in json.loads(prairielearn.render(report))["tests"]]
    assert len(names) == len(set(names))


def test_codegrade_points_are_the_exact_fraction() -> None:
    assert codegrade.points(codegrade.render(_report("dara"))) == {"tag": "points",
                                                                   "points": "37/100"}
    assert codegrade.points(codegrade.render(_report("amara")))["points"] == "1/1"
    assert codegrade.points(codegrade.render(_report("nadia")))["points"] == "0/1"


def test_coderunner_hides_the_rows_of_hidden_checks_from_students() -> None:
    report = _on_hidden_probes(_report("dara"))
    outcome = json.loads(coderunner.render(report))
    header = outcome["testresults"][0]
    assert header[0] == "iscorrect" and "ishidden" in header
    assert len(outcome["columnformats"]) == len(header) - 2
    hidden = [row for row in outcome["testresults"][1:] if row[header.index("ishidden")]]
    assert any(not row[0] for row in hidden)
    shown = " ".join(page.text for page in coderunner.student_pages(coderunner.render(report)))
    for row in hidden:
        if not row[0]:
            assert row[3] not in shown  # staff read it; students do not


def test_junit_carries_characters_xml_cannot_and_student_markup_as_text() -> None:
    report = copy.deepcopy(_report("dara"))
    failed = next(c for c in report["checks"] if not c["passed"])
    failed["message"] = "bad \x00\x1b[31m <b>bold</b> ]]> & \ud800 end"
    output = junit.render(report)
    read = xml_tree(output)  # parses: nothing XML cannot hold is left
    jsonschema.validate(read, contract("junit_results.schema.json"))
    assert "<b>bold</b> ]]> &" in " ".join(p.text for p in junit.student_pages(output))


# --- the recipes in deploy/ --------------------------------------------------------------------

DEPLOY = ROOT / "deploy"


def test_the_prairielearn_question_runs_the_entry_point_within_prairielearns_limits() -> None:
    options = json.loads((DEPLOY / "prairielearn" / "info.json").read_text())[
        "externalGradingOptions"]
    assert options["enabled"] and options["entrypoint"][1:] == ["-m",
                                                                "grader.platforms.prairielearn"]
    assert options["timeout"] <= prairielearn.DEFAULT_TIMEOUT_SECONDS
    limits = prairielearn.GRADER_LIMITS
    assert limits["total_seconds"] < options["timeout"]
    assert limits["memory_mb"] < prairielearn.DEFAULT_MEMORY_MB
    assert "grader.platforms.prairielearn" in (DEPLOY / "prairielearn" / "Dockerfile").read_text()
    settings = json.loads((DEPLOY / "prairielearn" / "attention-grader.json").read_text())
    assert settings["assignment"] == "attention" and isinstance(settings["seed"], int)


def test_the_cluster_recipes_grade_each_shard_into_its_own_folder() -> None:
    import subprocess

    import yaml

    job = yaml.safe_load((DEPLOY / "kubernetes" / "grade-class.yaml").read_text())
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    command = " ".join(spec["template"]["spec"]["containers"][0]["command"])
    count = spec["completions"]
    assert f"--shard $K/{count}" in command and "--out /class/shards/$K" in command
    sbatch = DEPLOY / "slurm" / "grade-class.sbatch"
    assert subprocess.run(["bash", "-n", str(sbatch)]).returncode == 0
    text = sbatch.read_text()
    assert '--shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT"' in text
    assert "attention-grader merge" in text


# --- a course's own folder, never a built-in ---------------------------------------------------

def _course_folder(folder: Path, source: str = "attention", **changes: str) -> Path:
    """A course's folder made as `new-assignment` makes it (its ID is the folder's name), with
    top-level keys changed."""
    from grader import registry

    folder.mkdir(parents=True)
    text = (registry.get(source).folder / registry.INTERFACE_FILE).read_text()
    data = tomllib.loads(text)
    lines = [f'id = "{folder.name}"', 'kind = "course"']
    for key, value in {**changes}.items():
        lines.append(f"{key} = {json.dumps(value)}")
    body = "\n".join(line for line in text.splitlines()
                     if line.split("=")[0].strip() not in {"id", "kind", *changes})
    body = body.split("[canonical]")[0]
    (folder / registry.INTERFACE_FILE).write_text("\n".join(lines) + "\n" + body)
    assert data["id"] == source
    return folder


def test_a_path_names_a_course_folder_and_a_bare_name_a_shipped_assignment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule (README, CONTRACT.md section 3): written as a path (a separator in it, or `.` or
    `~` first), a reference is a folder, whatever its name; a bare name is a shipped ID first."""
    from grader import registry

    monkeypatch.chdir(tmp_path)
    _course_folder(tmp_path / "attention", function="attend",
                   signature="attend(Q, K, V, mask=None)")
    _course_folder(tmp_path / "course" / "rope", source="rope", function="rotate",
                   signature="rotate(x, positions=None, theta=10000.0)")
    assert registry.get("attention").function == "scaled_dot_product_attention"
    for written in ("./attention", str(tmp_path / "attention"), "attention/"):
        assert registry.get(written).function == "attend"
        assert not registry.is_shipped(registry.get(written))
    assert registry.get("course/rope").function == "rotate"
    assert registry.is_shipped(registry.get("rope"))
    with pytest.raises(KeyError):
        registry.get("./rope")  # a path that holds no assignment is no ID either
    assert not registry.exists("./rope")


@pytest.mark.parametrize("kind", ["preset", "course"])
def test_a_course_kit_names_its_own_assignment_everywhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Without its assignment, a course's code is graded as the built-in (a CS336 student was
    told to rename their function to ours): the check command, the notebook's cell, the pytest
    line and the workflow of a course's kit all name it, a course folder by the copy the kit
    carries."""
    from grader.starter import kit_files

    monkeypatch.chdir(tmp_path)
    if kind == "preset":
        reference = named = "cs336-rope"
    else:
        _course_folder(tmp_path / "course" / "rope", source="rope", function="rotate",
                       signature="rotate(x, positions=None, theta=10000.0)")
        reference, named = "course/rope", "./course-assignment"
    files = kit_files(reference)
    stem = "cs336-rope" if kind == "preset" else "rope"
    readme, notebook = files["README.md"], files[f"{stem}.ipynb"]
    assert f"attention-grader check {stem}.ipynb --assignment {named}" in readme
    assert f"pytest --attention-submission {stem}.ipynb --attention-assignment {named}" in readme
    assert f"assignment={named!r})" in readme
    assert f"assignment={named!r})" in notebook
    assert f"--assignment {named}" in files[f"{stem}.py"]
    workflow = files[".github/workflows/classroom.yml"]
    assert f"assignment: {named}\n" in workflow and f"submission: {stem}.ipynb\n" in workflow
    if kind == "course":
        assert 'function = "rotate"' in files["course-assignment/assignment.toml"]
        assert json.loads(files["course-assignment/rubric.json"])["max_score"] == 10


def _with_checks_left_out(report: dict[str, Any], left_out: tuple[str, ...],
                          why: str) -> dict[str, Any]:
    """``report`` as the pipeline writes it for an interface that cannot express some probes."""
    changed = copy.deepcopy(report)
    points = {c["id"]: c["max_points"] for c in changed["checks"]}
    changed["checks"] = [c for c in changed["checks"] if c["id"] not in left_out]
    changed["max_score"] = round(sum(c["max_points"] for c in changed["checks"]), 4)
    changed["score"] = min(changed["score"], changed["max_score"])
    changed["metadata"]["not_probed"] = [{"check": c, "why": why, "points": points[c]}
                                         for c in left_out]
    return changed


@pytest.mark.parametrize("view", ["text", "markdown", "html", "gradescope"])
@pytest.mark.parametrize("hidden", [False, True])
def test_every_view_says_why_the_maximum_is_what_it_is(view: str, hidden: bool) -> None:
    """A course's interface that cannot express some probes grades out of fewer points (DLS's
    look-ahead mask out of 6.5): only the plain text once said why."""
    left_out = ("values-masked", "masked-keys-zero-weight")
    report = _with_checks_left_out(_report("amara"), left_out, "the interface takes no mask")
    if hidden:
        report = _on_hidden_probes(report)
    output = RENDERERS[view](report)
    pages = [output] if view != "gradescope" else [json.loads(output)["output"]]
    page = " ".join(pages[0].split())
    assert f"out of {report['max_score']:g}, not 10" in page.replace("**", "")
    assert "the interface takes no mask" in page
    for check in left_out:
        assert check.replace("-", "\\-") in page or check in page


@pytest.mark.parametrize("preset,maximum", [("coursera-dls-look-ahead-mask", 6.5),
                                            ("cs336-causal-self-attention-rope", 6.5)])
def test_a_starter_readme_states_the_real_maximum(preset: str, maximum: float) -> None:
    """The kit's README promised 10 points where the course's interface leaves checks out."""
    from grader.core.assignments import get
    from grader.core.scoring import max_score
    from grader.model import DEFAULT_SEED
    from grader.starter import kit_files

    spec = get(preset)
    assert max_score(spec, spec.probes(DEFAULT_SEED)) == maximum
    readme = kit_files(preset)["README.md"]
    assert f"## How it is graded ({maximum:g} points)" in readme
    left_out = [c["id"] for c in spec.rubric()["checks"]
                if f"| `{c['id']}` |" not in readme]
    assert left_out and all(check in readme.split("| check |")[0] for check in left_out)


@pytest.mark.parametrize("visibility", ["after_due_date", "after_published", "hidden"])
def test_gradescopes_visible_output_keeps_hidden_points_secret(visibility: str) -> None:
    """Gradescope hides the total score while tests are hidden (its specs.md, "Controlling
    Test Case Visibility"); the always-visible output showed the score and every check's
    points whatever --hidden-visibility said."""
    report = _on_hidden_probes(_report("chen"))
    results = json.loads(gradescope.render(report, hidden_visibility=visibility))
    output = results["output"]
    hidden = [t for t in results["tests"] if t["visibility"] != "visible"]
    assert hidden
    assert f"{report['score']:g} / {report['max_score']:g}" not in output
    assert "Score" not in output
    for test in hidden:
        assert f"`{test['name']}`" not in output
    assert "mask-inverted" in output  # the feedback itself stays
    shown = json.loads(gradescope.render(report, hidden_visibility="visible"))["output"]
    assert f"Score: {report['score']:g} / {report['max_score']:g}" in shown


def _setup_sh(tmp_path: Path, assignment: str, *packages: str) -> str:
    import zipfile

    zip_path = tmp_path / "autograder.zip"
    gradescope.build_zip(assignment, zip_path, seed=1, packages=packages)
    return zipfile.ZipFile(zip_path).read("setup.sh").decode()


def test_setup_passes_pip_arguments_as_pip_reads_them(tmp_path: Path) -> None:
    """`--package "torch --index-url URL"` (the action's own example) was written as one quoted
    word, which pip rejects; its index then applies to that package alone."""
    import shlex

    url = "https://download.pytorch.org/whl/cpu"
    setup = _setup_sh(tmp_path, "cs231n-multi-head-attention", f"torch --index-url {url}",
                      "scipy")
    installs = [shlex.split(line) for line in setup.splitlines()
                if line.startswith("/autograder/venv/bin/pip install") and "attention-grader"
                not in line and "--upgrade" not in line]
    assert sorted(installs) == sorted([
        ["/autograder/venv/bin/pip", "install", "scipy"],
        ["/autograder/venv/bin/pip", "install", "torch", "--index-url", url]])


@pytest.mark.parametrize("arrays,given", [
    ("tensorflow", "tensorflow-cpu"), ("tensorflow", "tensorflow-gpu==2.15"),
    ("tensorflow", "tf-nightly"), ("jax", "jax[cuda12]"), ("jax", "JAX[cpu]>=0.4"),
    ("torch", "torch --index-url https://download.pytorch.org/whl/cpu"),
    ("torch", "torch==2.3.0+cpu"), ("torch", "torch @ https://example.org/torch-2.3.0.whl"),
    ("torch", "https://example.org/wheels/torch-2.3.0+cpu-cp311-cp311-linux_x86_64.whl")])
def test_a_variant_of_the_framework_is_the_framework(arrays: str, given: str) -> None:
    """`--package tensorflow-cpu` installed `tensorflow` as well: a variant the instructor
    gives is the framework, not a package beside it."""
    from grader import registry

    interface = registry.Interface(arrays=arrays)
    assert registry.framework_packages(interface, (given,)) == ()
    assert registry.framework_packages(interface, ("scipy",)) == (
        registry.FRAMEWORK_PACKAGES[arrays],)
    assert registry.framework_packages(interface, ("torchvision", "jax-metal", "tensorflow-hub")
                                       ) == (registry.FRAMEWORK_PACKAGES[arrays],)


def test_the_docs_name_the_contract_and_install_what_exists() -> None:
    """The README called the contract "SPEC" without saying it is CONTRACT.md, and the shipped
    example notebook told students to `pip install attention-grader`, which is not published."""
    import re

    readme = (ROOT / "README.md").read_text()
    assert not re.findall(r"\bSPEC\b", readme)
    assert "[CONTRACT.md](CONTRACT.md)" in readme
    shipped = [p for p in ROOT.glob("assignments/**/*") if p.suffix in (".ipynb", ".md", ".py")]
    shipped += [ROOT / "README.md", ROOT / "grader" / "batch.py"]
    unpublished = re.compile(r"pip install '?attention-grader")
    assert [p.name for p in shipped if unpublished.search(p.read_text())] == []
