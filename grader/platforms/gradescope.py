"""Gradescope, all of it: the results it reads, the zip it runs, and the export it gives back.

- ``render``: ``results.json``, one test per check (misconceptions as tags); checks run on hidden
  probes get the instructor's visibility (``VISIBILITIES``), and what every student sees at once
  (the page in ``output``, the test about a report that could not be graded) is
  ``grader.render.visible.student_view`` of the report.
- ``build_zip``: ``autograder.zip``, holding ``setup.sh`` and ``run_autograder`` at its root, the
  grader itself (so setup never depends on an unpublished package; its requirements are the
  project's own) and ``autograder.json`` (assignment, secret seed, visibility of the hidden
  probes' tests); a course's own assignment folder goes beside them, ``course-assignment/``,
  and is graded by its path (its ID may be a built-in's).
- ``run``: ``run_autograder`` calls ``python -m grader.platforms.gradescope run``, which grades
  what is in ``<root>/submission`` and always writes ``<root>/results/results.json``; if even
  Python fails, the shell script writes a zero-score results file that says so.
- ``export_submissions``: the "export submissions" folder (``submission_metadata.yml`` and a
  folder per submission), which ``attention-grader batch`` grades.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from grader import registry
from grader.render import markdown
from grader.render.formats import Format, Page
from grader.render.verdict import units
from grader.render.visible import student_view, without_hidden_points

#: Gradescope's visibility settings for a test (its specs.md, "Controlling Test Case Visibility")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEFAULT_VISIBILITY = "after_published"
#: when a student sees a test of each visibility, as the always-visible output says it
SHOWN_WHEN = {"hidden": "to the course staff only", "after_due_date": "after the due date",
              "after_published": "when the grades are published", "visible": "now"}


# --- results.json ------------------------------------------------------------------------------

def _check_test(check: dict[str, Any], tags: list[str], hidden_visibility: str,
                prefix: str = "") -> dict[str, Any]:
    return {
        "name": prefix + check["id"],
        "score": check["points"],
        "max_score": check["max_points"],
        "status": "passed" if check["passed"] else "failed",
        "output": markdown.fence(check["message"]),
        "output_format": "md",
        "tags": tags if not check["passed"] else [],
        "visibility": hidden_visibility if check.get("hidden") else "visible",
    }


def _not_graded_test(view: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The always-visible test that says why a submission (or a part) could not be graded."""
    return {
        "name": prefix + "submission could be graded",
        "score": 0.0,
        "max_score": view["max_score"],
        "status": "failed",
        "output": "\n\n".join(f"{e['kind']}:\n\n" + markdown.fence(e["message"])
                              for e in view["errors"]),
        "output_format": "md",
        "tags": [e["kind"] for e in view["errors"]],
        "visibility": "visible",
    }


def render(report: dict[str, Any], *, hidden_visibility: str = DEFAULT_VISIBILITY) -> str:
    """``results.json`` text; checks run on hidden probes get ``hidden_visibility``."""
    view = student_view(report)
    tests = []
    # (one test per check of each part of a multi-part report, and one for a part not graded)
    for (prefix, unit), (_, shown) in zip(units(report), units(view)):
        tags = [m["id"] for m in unit["misconceptions"]]
        tests += [_check_test(check, tags, hidden_visibility, prefix) for check in unit["checks"]]
        if unit["status"] != "graded":
            tests.append(_not_graded_test(shown, prefix))
    # while tests are hidden Gradescope hides the total score: the output, always visible,
    # shows neither it nor the hidden tests' points
    page = (view if hidden_visibility == "visible"
            else without_hidden_points(report, SHOWN_WHEN[hidden_visibility]))
    results = {
        "score": report["score"],
        "output": markdown.render(page),
        "output_format": "md",
        "stdout_visibility": "hidden",
        "execution_time": report.get("metadata", {}).get("duration_seconds", 0.0),
        "tests": tests,
    }
    return json.dumps(results, indent=2) + "\n"


def student_pages(output: str) -> list[Page]:
    """What a student reads of ``results.json`` at once: the output and the visible tests."""
    results = json.loads(output)
    shown = [results["output"]] + [test["output"] for test in results["tests"]
                                   if test["visibility"] == "visible"]
    return [Page("markdown", text) for text in shown]


FORMAT = Format("gradescope", render, student_pages, keeps_hidden_tests_secret=True)


# --- autograder.zip ----------------------------------------------------------------------------

CONFIG_NAME = "autograder.json"
BUNDLE_DIR = "attention-grader"
#: where the zip carries a course's own assignment folder (beside the grader, never among the
#: shipped assignments, whose IDs it may share)
COURSE_DIR = "course-assignment"

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
cd /autograder/source
if ! python3 -m venv /autograder/venv; then
    apt-get update && apt-get install -y python3-venv python3-pip
    python3 -m venv /autograder/venv
fi
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install ./attention-grader
# Only root (the grader) may read the grader's code and the secret seed; where the submission
# runs as nobody without a root of its own, it cannot read them either
chmod -R go-rwx /autograder/source
/autograder/venv/bin/python -c 'import grader, reference, os; print(os.path.dirname(grader.__file__)); print(os.path.dirname(reference.__file__))' | xargs chmod -R go-rwx
"""
EXTRA_PACKAGES = """\
# packages the submissions may import, asked for with gradescope-zip --package
"""
PIP_INSTALL = "/autograder/venv/bin/pip install {arguments}\n"

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT and AUTOGRADER_PYTHON exist for
# testing the autograder outside Gradescope. Everything is inside main(), and the last line ends
# the script: bash reads a script as it runs, so lines a submission appended to this file while
# it was being graded are never read.
main() {
    local root="${AUTOGRADER_ROOT:-/autograder}"
    local python="${AUTOGRADER_PYTHON:-$root/venv/bin/python}"
    mkdir -p "$root/results"
    rm -f "$root/results/results.json"
    chmod go-rwx "$root/source/autograder.json" 2>/dev/null || true
    "$python" -m grader.platforms.gradescope run --root "$root" --config "$root/source/autograder.json"
    if [ ! -s "$root/results/results.json" ]; then
        printf '%s\\n' '{"score": 0.0, "output": "The autograder could not start (its Python environment failed). Your submission was not graded; please tell the course staff.", "output_format": "md", "tests": []}' > "$root/results/results.json"
    fi
}
main "$@"; exit 0
"""


#: where the project describes itself when the grader runs from its source tree
SOURCE_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
DISTRIBUTION = "attention-grader"


def requirements() -> list[str]:
    """The grader's dependencies, extras left out, as the project declares them: its
    ``pyproject.toml`` in a source tree, else the installed distribution's metadata."""
    if SOURCE_PYPROJECT.is_file():
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib

        project = tomllib.loads(SOURCE_PYPROJECT.read_text(encoding="utf-8"))["project"]
        if project.get("name") == DISTRIBUTION:
            return list(project["dependencies"])
    return [r for r in metadata.requires(DISTRIBUTION) or [] if "extra ==" not in r]


def bundled_packages(bundle: Path) -> list[str]:
    """The packages of a bundled copy: each of its folders with an ``__init__.py``
    (``assignments`` installs as ``grader._assignments``)."""
    names = []
    for marker in sorted(bundle.rglob("__init__.py")):
        parts = marker.parent.relative_to(bundle).parts
        names.append("grader._assignments" if parts == ("assignments",) else ".".join(parts))
    return names


def _project_toml(bundle: Path) -> str:
    """A pyproject.toml for the bundled copy: this grader's version, the project's
    requirements, and the packages the copy holds."""
    from grader.version import __version__

    return "\n".join([
        "[build-system]",
        'requires = ["setuptools>=64"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f'name = "{DISTRIBUTION}"',
        f'version = "{__version__}"',
        'requires-python = ">=3.10"',
        f"dependencies = {json.dumps(requirements())}",
        "",
        "[project.scripts]",
        'attention-grader = "grader.launch:main"',
        "",
        "[tool.setuptools]",
        f"packages = {json.dumps(bundled_packages(bundle))}",
        'package-dir = { "grader._assignments" = "assignments" }',
        "",
        "[tool.setuptools.package-data]",
        'grader = ["schema/*.json", "py.typed"]',
        '"grader._assignments" = ["*/rubric.json", "*/assignment.toml"]',
        'reference = ["py.typed"]',
        "",
    ])


def _copy_package(name: str, destination: Path) -> None:
    module = __import__(name)
    assert module.__file__ is not None  # a regular package, not a namespace
    source = Path(module.__file__).resolve().parent
    shutil.copytree(source, destination / name,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_assignments"))


def write_bundle(destination: Path) -> None:
    """An installable copy of the grader in ``destination`` (pip install DESTINATION works),
    with every shipped assignment (a course's own folder goes beside it, ``COURSE_DIR``)."""
    destination.mkdir(parents=True, exist_ok=True)
    _copy_package("grader", destination)
    _copy_package("reference", destination)
    for info in registry.shipped().values():
        _write_assignment(info, destination / "assignments" / info.id)
    (destination / "assignments" / "__init__.py").write_text("")
    (destination / "pyproject.toml").write_text(_project_toml(destination))


def _write_assignment(info: registry.AssignmentInfo, target: Path) -> None:
    """An assignment's folder: its ``assignment.toml`` and its rubric (a course folder may use
    its task's, written out here); a multi-part one's course-folder parts inside it, each
    named by its new path (``./part-1``)."""
    target.mkdir(parents=True, exist_ok=True)
    text = (info.folder / registry.INTERFACE_FILE).read_text(encoding="utf-8")
    if info.multi_part:
        import tomlkit

        document = tomlkit.parse(text)
        for number, (table, (found, _)) in enumerate(
                zip(document["parts"], registry.parts_of(info)), 1):
            if not registry.is_shipped(found):
                _write_assignment(found, target / f"part-{number}")
                table["assignment"] = f"./part-{number}"
        text = tomlkit.dumps(document)
    (target / registry.INTERFACE_FILE).write_text(text)
    (target / registry.RUBRIC_FILE).write_text(json.dumps(registry.rubric_of(info), indent=2))


def assignment_of(config: dict[str, Any], source: Path) -> str:
    """The assignment the configuration grades: a shipped ID, or the course's folder the zip
    carries (``source/COURSE_DIR``), by its path: its ID may be a built-in's."""
    folder = config.get("assignment_folder")
    return str((source / folder).resolve()) if folder else str(config["assignment"])


def extra_installs(packages: Sequence[str]) -> str:
    """setup.sh's lines installing ``packages``, each a string of pip arguments (split as a
    shell would: "torch --index-url URL" is three): plain requirements in one pip call, each
    one with options (an index) in a call of its own, so its options apply to it alone."""
    try:
        split = {p: shlex.split(p) for p in packages}
    except ValueError as exc:
        raise ValueError(f"a --package value is not pip arguments: {exc}") from None
    plain = [p for p in packages if not any(w.startswith("-") for w in split[p])]
    calls = [plain] if plain else []
    calls += [[p] for p in packages if p not in plain]
    return (EXTRA_PACKAGES if calls else "") + "".join(PIP_INSTALL.format(arguments=" ".join(
        shlex.quote(word) for p in call for word in split[p])) for call in calls)


def build_zip(assignment: str, output: Path, *, seed: int | None = None,
              hidden_visibility: str = DEFAULT_VISIBILITY,
              packages: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``autograder.zip`` for ``assignment``; return the configuration baked into it.

    Without ``seed``, a random secret seed is drawn: the probes on Gradescope then have values no
    student saw locally, so memorised outputs earn nothing, while correct code scores the same.
    """
    if not registry.exists(assignment):
        raise ValueError(registry.unknown_assignment(assignment))
    info = registry.get(assignment)
    # a course's folder travels beside the package, named by its path: inside it, under its
    # ID, `my-course/attention` was the built-in `attention`, and correct code scored 0
    course = None if registry.is_shipped(info) else info
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    # the framework the course's code is written in is installed with the grader (a torch
    # course's correct code once scored 0 there, told `torch` was missing)
    interfaces = ([found.interface for found, _ in registry.parts_of(info)] if info.multi_part
                  else [info.interface])
    for interface in interfaces:
        packages = (*packages, *registry.framework_packages(interface, tuple(packages)))
    config = {
        "assignment": info.id,
        "seed": secrets.randbelow(2**31 - 1) + 1 if seed is None else int(seed),
        "hidden_visibility": hidden_visibility,
        "packages": list(packages),
    }
    if course is not None:
        config["assignment_folder"] = COURSE_DIR
    setup = SETUP_SH + extra_installs(packages)
    with tempfile.TemporaryDirectory() as scratch:
        bundle = Path(scratch) / BUNDLE_DIR
        write_bundle(bundle)
        if course is not None:
            _write_assignment(course, Path(scratch) / COURSE_DIR)
        output.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in (("setup.sh", setup), ("run_autograder", RUN_AUTOGRADER)):
                entry = zipfile.ZipInfo(name)
                entry.external_attr = 0o755 << 16
                archive.writestr(entry, text)
            archive.writestr(CONFIG_NAME, json.dumps(config, indent=2) + "\n")
            for path in sorted(Path(scratch).rglob("*")):
                if path.is_file():
                    archive.write(path, str(path.relative_to(scratch)))
    return config


# --- run_autograder -----------------------------------------------------------------------------

def _no_submission_results(folder: Path) -> dict[str, Any]:
    return {
        "score": 0.0,
        "output": (f"No `.py` file or `.ipynb` notebook was found in your submission "
                   f"(looked in `{folder.name}/`). Upload the file that defines the function."),
        "output_format": "md",
        "tests": [],
    }


def run(root: Path, config: dict[str, Any], source: Path | None = None) -> Path:
    """Grade ``root/submission`` as configured (the zip unpacked in ``source``, by default
    ``root/source``); write and return ``root/results/results.json``."""
    from grader.files import write_atomically
    from grader.load import candidates
    from grader.pipeline import grade_best_of

    results_path = root / "results" / "results.json"
    folder = root / "submission"
    files = candidates(folder) if folder.is_dir() else ()
    if not files:
        write_atomically(results_path, json.dumps(_no_submission_results(folder), indent=2))
        return results_path
    # several files (a notebook and a .py, say): each is graded and the best one counts
    assignment = assignment_of(config, source or root / "source")
    report = grade_best_of(files, assignment=assignment,
                           seed=int(config.get("seed", 0)))
    text = render(report, hidden_visibility=config.get("hidden_visibility", DEFAULT_VISIBILITY))
    # written here, after the submission's processes are gone, replacing whatever it may have
    # left at that path
    write_atomically(results_path, text)
    return results_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.platforms.gradescope")
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="grade <root>/submission (inside Gradescope)")
    run_parser.add_argument("--root", type=Path, default=Path("/autograder"))
    run_parser.add_argument("--config", type=Path, default=None)
    arguments = parser.parse_args(argv)
    config_path = arguments.config or arguments.root / "source" / CONFIG_NAME
    config = json.loads(config_path.read_text())
    print(f"results: {run(arguments.root, config, config_path.parent)}", file=sys.stderr)
    return 0


# --- the "export submissions" folder -----------------------------------------------------------

EXPORT_METADATA = "submission_metadata.yml"


def is_export(folder: Path) -> bool:
    """Whether ``folder`` is an "export submissions" folder of Gradescope."""
    return folder.is_dir() and (folder / EXPORT_METADATA).is_file()


def _export_loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """Gradescope's metadata may carry Ruby tags (``!ruby/object:BigDecimal``): read the
        plain value underneath instead of failing."""

    def untagged(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("!", untagged)
    return Loader


def _submitters(info: Any) -> str:
    if not isinstance(info, dict):
        return ""
    people = info.get(":submitters") or info.get("submitters") or []
    names = []
    for person in people if isinstance(people, list) else []:
        if isinstance(person, dict):
            name = person.get(":name") or person.get("name") or ""
            email = person.get(":email") or person.get("email") or ""
            names.append(f"{name} <{email}>" if name and email else str(name or email))
    return "; ".join(n for n in names if n)


def export_submissions(folder: Path) -> list[tuple[str, tuple[Path, ...]]]:
    """The submissions of an export folder: each student, named after the submitters, with the
    candidate files of their submission's folder."""
    import yaml

    from grader.load import candidates

    listed = yaml.load((folder / EXPORT_METADATA).read_text(),  # noqa: S506 - safe loader
                       Loader=_export_loader()) or {}
    found = []
    for key in sorted(listed):
        submission = folder / str(key)
        student = _submitters(listed[key]) or str(key)
        files = (candidates(submission)
                 if submission.is_dir() and not submission.is_symlink() else ())
        found.append((f"{student} ({key})" if student != key else student, files))
    return found


if __name__ == "__main__":
    sys.exit(main())
