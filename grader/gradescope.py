"""Gradescope: build an ``autograder.zip`` and run it inside Gradescope's container.

The zip holds ``setup.sh`` and ``run_autograder`` at its root, the grader itself (so setup never
depends on an unpublished package) and ``autograder.json`` (assignment, secret seed, visibility of
the hidden probes' tests). ``run_autograder`` calls ``python -m grader.gradescope run``, which
grades what is in ``<root>/submission`` and always writes ``<root>/results/results.json``; if
even Python fails, the shell script writes a zero-score results file that says so.
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
from grader.render.gradescope import VISIBILITIES

CONFIG_NAME = "autograder.json"
#: the packages of the bundled copy: those of pyproject.toml (a test keeps the two equal)
PACKAGES = ("grader", "grader.core", "grader.sandbox", "grader.render", "grader._assignments",
            "reference")
BUNDLE_DIR = "attention-grader"

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
/autograder/venv/bin/pip install {packages}
"""

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
    "$python" -m grader.gradescope run --root "$root" --config "$root/source/autograder.json"
    if [ ! -s "$root/results/results.json" ]; then
        printf '%s\\n' '{"score": 0.0, "output": "The autograder could not start (its Python environment failed). Your submission was not graded; please tell the course staff.", "output_format": "md", "tests": []}' > "$root/results/results.json"
    fi
}
main "$@"; exit 0
"""


def _project_toml() -> str:
    """A pyproject.toml for the bundled copy, with this installation's version and dependencies."""
    try:
        version = metadata.version("attention-grader")
        requires = [r for r in metadata.requires("attention-grader") or [] if "extra ==" not in r]
    except metadata.PackageNotFoundError:  # running from a plain checkout
        from grader.version import __version__ as version

        requires = ["numpy>=1.22", "click>=8.0", "jsonschema>=4.0", "nbformat>=5.0",
                    'tomli>=1.1; python_version < "3.11"']
    return "\n".join([
        "[build-system]",
        'requires = ["setuptools>=64"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        'name = "attention-grader"',
        f'version = "{version}"',
        'requires-python = ">=3.10"',
        f"dependencies = {json.dumps(requires)}",
        "",
        "[project.scripts]",
        'attention-grader = "grader.launch:main"',
        "",
        "[tool.setuptools]",
        f"packages = {json.dumps(list(PACKAGES))}",
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


def write_bundle(destination: Path, extra: registry.AssignmentInfo | None = None) -> None:
    """An installable copy of the grader in ``destination`` (pip install DESTINATION works),
    with every shipped assignment and, when given, a course's own (``extra``)."""
    destination.mkdir(parents=True, exist_ok=True)
    _copy_package("grader", destination)
    _copy_package("reference", destination)
    for info in [*registry.shipped().values(), *([extra] if extra else [])]:
        target = destination / "assignments" / info.id
        target.mkdir(parents=True, exist_ok=True)
        for name in (registry.INTERFACE_FILE, registry.RUBRIC_FILE):
            if name == registry.RUBRIC_FILE:  # (a course folder may use its task's rubric)
                (target / name).write_text(json.dumps(registry.rubric_of(info), indent=2))
            else:
                (target / name).write_text((info.folder / name).read_text(encoding="utf-8"))
    (destination / "assignments" / "__init__.py").write_text("")
    (destination / "pyproject.toml").write_text(_project_toml())


def build_zip(assignment: str, output: Path, *, seed: int | None = None,
              hidden_visibility: str = "after_published",
              packages: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``autograder.zip`` for ``assignment``; return the configuration baked into it.

    Without ``seed``, a random secret seed is drawn: the probes on Gradescope then have values no
    student saw locally, so memorised outputs earn nothing, while correct code scores the same.
    """
    if not registry.exists(assignment):
        raise ValueError(registry.unknown_assignment(assignment))
    info = registry.get(assignment)
    extra = None if info.id in registry.shipped() else info
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    # the framework the course's code is written in is installed with the grader (a torch
    # course's correct code once scored 0 there, told `torch` was missing)
    packages = (*packages, *registry.framework_packages(info.interface, tuple(packages)))
    config = {
        "assignment": info.id,
        "seed": secrets.randbelow(2**31 - 1) + 1 if seed is None else int(seed),
        "hidden_visibility": hidden_visibility,
        "packages": list(packages),
    }
    setup = SETUP_SH + (EXTRA_PACKAGES.format(packages=" ".join(shlex.quote(p) for p in packages))
                        if packages else "")
    with tempfile.TemporaryDirectory() as scratch:
        bundle = Path(scratch) / BUNDLE_DIR
        write_bundle(bundle, extra)
        output.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in (("setup.sh", setup), ("run_autograder", RUN_AUTOGRADER)):
                entry = zipfile.ZipInfo(name)
                entry.external_attr = 0o755 << 16
                archive.writestr(entry, text)
            archive.writestr(CONFIG_NAME, json.dumps(config, indent=2) + "\n")
            for path in sorted(bundle.rglob("*")):
                if path.is_file():
                    archive.write(path, f"{BUNDLE_DIR}/{path.relative_to(bundle)}")
    return config


def _no_submission_results(folder: Path) -> dict[str, Any]:
    return {
        "score": 0.0,
        "output": (f"No `.py` file or `.ipynb` notebook was found in your submission "
                   f"(looked in `{folder.name}/`). Upload the file that defines the function."),
        "output_format": "md",
        "tests": [],
    }


def run(root: Path, config: dict[str, Any]) -> Path:
    """Grade ``root/submission`` as configured; write and return ``root/results/results.json``."""
    from grader.files import write_atomically
    from grader.load import candidates
    from grader.pipeline import grade_best_of
    from grader.render import gradescope

    results_path = root / "results" / "results.json"
    folder = root / "submission"
    files = candidates(folder) if folder.is_dir() else ()
    if not files:
        write_atomically(results_path, json.dumps(_no_submission_results(folder), indent=2))
        return results_path
    # several files (a notebook and a .py, say): each is graded and the best one counts
    report = grade_best_of(files, assignment=config["assignment"],
                           seed=int(config.get("seed", 0)))
    text = gradescope.render(report, hidden_visibility=config.get("hidden_visibility",
                                                                  "after_published"))
    # written here, after the submission's processes are gone, replacing whatever it may have
    # left at that path
    write_atomically(results_path, text)
    return results_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.gradescope")
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="grade <root>/submission (inside Gradescope)")
    run_parser.add_argument("--root", type=Path, default=Path("/autograder"))
    run_parser.add_argument("--config", type=Path, default=None)
    arguments = parser.parse_args(argv)
    config_path = arguments.config or arguments.root / "source" / CONFIG_NAME
    config = json.loads(config_path.read_text())
    print(f"results: {run(arguments.root, config)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
