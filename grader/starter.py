"""Starter kits: what an instructor hands out for an assignment, made from the assignment's data.

``attention-grader starter ID --out DIR`` writes a ready template repository: a student README,
a starter notebook (stub, explanations, a check cell), a starter ``.py`` and the GitHub Classroom
workflow. The kits under ``assignments/<id>/starter/`` are this command's output (a test keeps
them identical).
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from grader import registry
from grader.core.assignments import Assignment, get

#: where classrooms find the action; courses that fork the grader change this line
ACTION_REFERENCE = "attention-grader/attention-grader@v0"
#: where a course folder's kit carries a copy of the folder: what its check command, notebook
#: cell, pytest line and workflow name (the repository a kit becomes has no other copy)
COURSE_FOLDER = "course-assignment"


def reference(spec: Assignment) -> str:
    """How the kit names its assignment: a shipped one by its ID, a course's folder by the
    kit's copy of it (written as a path: its ID may be a built-in's)."""
    return spec.id if registry.is_shipped(spec.info) else f"./{COURSE_FOLDER}"


def file_stem(spec: Assignment) -> str:
    """The kit's file names (``STEM.ipynb``, ``STEM.py``): the assignment's ID, as one plain
    file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec.id).strip("._") or "assignment"


def _docstring(spec: Assignment) -> str:
    bullets = "\n".join(textwrap.fill(c, 88, initial_indent="    - ", subsequent_indent="      ")
                        for c in spec.conventions)
    return f'    """{spec.summary}\n\n{bullets}\n    """'


def _not_yet(name: str, indent: str = "        ") -> str:
    return (f"{indent}# Your code here: replace the line below.\n"
            f'{indent}raise NotImplementedError("{name} is not implemented yet")\n')


def _stateful_stub(spec: Assignment) -> str:
    """A class called forward then backward (CMU 11-785's mytorch layers): plain Python, its
    arguments read from the signature ("Name(init).forward(...), then .backward(...)")."""
    found = re.match(r"\w+\((.*?)\)\.forward\((.*?)\)(?:, then \.(\w+)\((.*?)\))?",
                     spec.signature)
    init, forward, method, backward = found.groups() if found else ("", "*args", "", "")
    method = spec.interface.backward_method or method or "backward"
    return (f"class {spec.function}:\n{_docstring(spec)}\n\n"
            f"    def __init__(self{', ' + init if init else ''}):\n"
            f"        # Keep here what forward and backward share.\n        pass\n\n"
            f"    def forward(self, {forward}):\n" + _not_yet(f"{spec.function}.forward")
            + f"\n    def {method}(self, {backward or 'grad_output'}):\n"
            + _not_yet(f"{spec.function}.{method}"))


def _autograd_stub(spec: Assignment) -> str:
    """A torch.autograd.Function subclass (and, for a course's adapter, the function that
    returns it), its forward's arguments read from the signature's ``.apply(...)``."""
    found = re.search(r"\.apply\((.*?)\)", spec.signature)
    forward = found.group(1) if found else "*args"
    name = "AttentionFunction" if spec.interface.factory else spec.function
    backward = ("    @staticmethod\n    def backward(ctx, grad_output):\n"
                + (_not_yet(f"{name}.backward") if spec.interface.stateful else
                   "        raise NotImplementedError\n"))
    source = (f"class {name}(torch.autograd.Function):\n{_docstring(spec)}\n\n"
              f"    @staticmethod\n    def forward(ctx, {forward}):\n"
              + _not_yet(f"{name}.forward") + "\n" + backward)
    if spec.interface.factory:
        source += f"\n\ndef {spec.function}():\n    return {name}\n"
    return source


def builder_stub(spec: Assignment) -> str:
    """RoPE in two steps: the table builder the course hands out beside the applier (its
    ``rope_tables.signature``), not written yet; "" for other courses."""
    signature = str(dict(spec.interface.rope_tables).get("signature", ""))
    if not signature:
        return ""
    name = signature.split("(", 1)[0]
    body = (f'        raise NotImplementedError("{name} is not implemented yet")\n'
            if ".forward" in signature else
            f'    raise NotImplementedError("{name} is not implemented yet")\n')
    if ".forward" in signature:
        construct, _, forward = signature.partition(".forward")
        init = construct.split("(", 1)[1].rstrip(")")
        return (f"class {name}(nn.Module):\n    \"\"\"Builds RoPE's tables.\"\"\"\n\n"
                f"    def __init__(self, {init}):\n        super().__init__()\n\n"
                f"    def forward(self, {forward.strip('()')}):\n{body}\n\n")
    return f'def {signature}:\n    """Builds RoPE\'s tables."""\n{body}\n\n'


def stub_source(spec: Assignment) -> str:
    """The function (or, in a course that asks for a class, the class) with its docstring and a
    body that says it is not written yet (after RoPE's table builder, in a course of two)."""
    return builder_stub(spec) + _own_stub(spec)


def _own_stub(spec: Assignment) -> str:
    if spec.interface.kind == "autograd":
        return _autograd_stub(spec)
    if spec.interface.kind == "class" and spec.interface.stateful:
        return _stateful_stub(spec)
    if spec.interface.kind == "class":
        construct, _, forward = spec.signature.partition(".forward")
        init = construct.split("(", 1)[1].rstrip(")")
        attributes = ", ".join(f"`{path}`" for path, _ in spec.interface.weights) or "none"
        return (f"class {spec.function}(nn.Module):\n{_docstring(spec)}\n\n"
                f"    def __init__(self, {init}):\n        super().__init__()\n"
                f"        # Your layers here; the grader sets these weights: {attributes}.\n\n"
                f"    def forward(self, {forward.strip('()')}):\n"
                + _not_yet(f"{spec.function}.forward"))
    return f"def {spec.signature}:\n{_docstring(spec)}\n" + _not_yet(spec.function, "    ")


def imports(spec: Assignment) -> str:
    """The imports the course's interface works in."""
    arrays = spec.interface.arrays
    if arrays == "torch":
        builds_a_module = ".forward" in str(dict(spec.interface.rope_tables).get("signature"))
        return "import torch\nfrom torch import nn" if spec.interface.kind == "class" or \
            builds_a_module else "import torch"
    if arrays == "tensorflow":
        return "import tensorflow as tf"
    if arrays == "jax":
        return "import jax.numpy as jnp"
    return "import numpy as np"


def _inferred(spec: Assignment) -> bool:
    """Whether grading finds the assignment from the function alone: a built-in's."""
    return spec.info.kind == "builtin" and registry.is_shipped(spec.info)


def check_option(spec: Assignment) -> str:
    """The command-line option naming the assignment, where it cannot be inferred."""
    return "" if _inferred(spec) else f" --assignment {reference(spec)}"


def pytest_option(spec: Assignment) -> str:
    """The pytest plugin's option naming the assignment, where it cannot be inferred."""
    return "" if _inferred(spec) else f" --attention-assignment {reference(spec)}"


def check_call(spec: Assignment) -> str:
    """The notebook's self-check call."""
    return (f"check({spec.function}"
            + ("" if _inferred(spec) else f", assignment={reference(spec)!r}") + ")")


def starter_py(spec: Assignment) -> str:
    return (f'"""Assignment `{spec.id}`: write `{spec.function}`.\n\n'
            f"Check your work with `attention-grader check {file_stem(spec)}.py"
            f"{check_option(spec)}`.\n"
            f'"""\n\n{imports(spec)}\n\n\n' + stub_source(spec))


def _cell(kind: str, source: str) -> dict[str, object]:
    cell: dict[str, object] = {"cell_type": kind, "metadata": {}, "source": source.splitlines(True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def starter_notebook(spec: Assignment) -> str:
    conventions = "\n".join(f"- {c}" for c in spec.conventions)
    cells = [
        _cell("markdown", f"# Assignment `{spec.id}`\n\n{spec.summary}\n\n"
                          f"Write `{spec.signature}`:\n\n{conventions}\n\n"
                          "Use NumPy (PyTorch also works: the grader converts what you return)."),
        _cell("code", imports(spec)),
        _cell("markdown", "## Your implementation"),
        _cell("code", stub_source(spec).rstrip("\n")),
        _cell("markdown", "## Check your work\n\n"
                          "This runs the grader's probes on your function and names the "
                          "misconception behind any wrong answer. It needs the grader installed "
                          "in this kernel: `pip install` it from the copy or repository your "
                          "course gives you (it is not on PyPI). Your function runs here, in "
                          "your own kernel."),
        _cell("code", f"from grader import check\n\n{check_call(spec)}"),
    ]
    notebook = {"cells": cells,
                "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                            "name": "python3"},
                             "language_info": {"name": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    for index, cell in enumerate(cells):
        cell["id"] = f"{file_stem(spec).replace('_', '-')}-{index}"
    return json.dumps(notebook, indent=1) + "\n"


def _packages_input(spec: Assignment) -> str:
    """The action's `packages` input: the framework the course's code is written in."""
    packages = registry.framework_packages(spec.interface)
    return f"\n          packages: {' '.join(packages)}" if packages else ""


def classroom_workflow(spec: Assignment) -> str:
    stem = file_stem(spec)
    return f"""\
# GitHub Classroom autograding for `{spec.id}`: put this file at .github/workflows/classroom.yml
# in the assignment's template repository. Every push grades {stem}.ipynb and reports the
# score to Classroom; the feedback appears in the run's summary page.
name: Autograding Tests
on:
  - push
  - repository_dispatch
  - workflow_dispatch
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    steps:
      - name: Checkout code
        uses: actions/checkout@v4
      - name: Grade {spec.id}
        id: grader
        uses: {ACTION_REFERENCE}
        with:
          submission: {stem}.ipynb
          assignment: {reference(spec)}{_packages_input(spec)}
      - name: Autograding Reporter
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
          GRADER_RESULTS: "${{{{ steps.grader.outputs.result }}}}"
        with:
          runners: grader
"""


def _graded_checks(spec: Assignment) -> tuple[list[dict[str, Any]], str]:
    """The rubric's checks the course's interface lets the grader run, and a sentence naming
    those it leaves out (empty when none is)."""
    from grader.core.scoring import probed_checks
    from grader.model import DEFAULT_SEED

    run = probed_checks(spec, spec.probes(DEFAULT_SEED))
    left_out = [c for c in spec.rubric()["checks"] if c not in run]
    if not left_out:
        return run, ""
    why = "; ".join(sorted(set(spec.left_out(DEFAULT_SEED).values())))
    return run, (f"Out of {sum(float(c['points']) for c in run):g} points, not "
                 f"{spec.rubric()['max_score']:g}: this course's interface cannot take some test "
                 f"inputs ({why}), so these checks are not run: "
                 + ", ".join(f"`{c['id']}`" for c in left_out) + ".\n\n")


def student_readme(spec: Assignment) -> str:
    conventions = "\n".join(f"- {c}" for c in spec.conventions)
    graded, left_out = _graded_checks(spec)
    checks = "\n".join(f"| `{c['id']}` | {c['points']:g} |" for c in graded)
    total = round(sum(float(c["points"]) for c in graded), 4)
    stem = file_stem(spec)
    return f"""\
# Assignment `{spec.id}`

{spec.summary}

## What to write

```python
{spec.signature}
```

{conventions}

Write it in `{stem}.ipynb` (or in `{stem}.py`, if you prefer a plain file). Any correct
style gets full marks: loops, `@`, `einsum`, float32, PyTorch tensors.

## Check your work, three ways

1. **Command line**: `attention-grader check {stem}.ipynb{check_option(spec)}` (or `{stem}.py`). It runs your
   code in an isolated process, compares it with a reference on many probes, and names the
   misconception behind any wrong answer, with the smallest input that shows it.
2. **In the notebook**: run the last cell, `from grader import check; {check_call(spec)}`.
3. **pytest**: `pytest --attention-submission {stem}.ipynb{pytest_option(spec)}` turns every check into a test.

Install the grader once with `pip install` and the copy or repository address your course gives you
(the grader is not published on PyPI).
Every push to this repository is graded the same way by GitHub Classroom; open the run's summary
page for the feedback.

## How it is graded ({total:g} points)

{left_out}| check | points |
|---|---|
{checks}

Reference checks give credit per probe that matches; the other checks are all or nothing. The
final grading uses probes with new values, so a correct function scores the same and memorised
outputs score nothing.
"""


def kit_files(assignment: str) -> dict[str, str]:
    """Relative path -> text of every file of the starter kit (a course folder's kit carries a
    copy of the folder, ``COURSE_FOLDER``, which everything in it names)."""
    spec = get(assignment)
    stem = file_stem(spec)
    files = {
        "README.md": student_readme(spec),
        f"{stem}.ipynb": starter_notebook(spec),
        f"{stem}.py": starter_py(spec),
        ".github/workflows/classroom.yml": classroom_workflow(spec),
    }
    if not registry.is_shipped(spec.info):
        files[f"{COURSE_FOLDER}/{registry.INTERFACE_FILE}"] = (
            spec.info.folder / registry.INTERFACE_FILE).read_text(encoding="utf-8")
        files[f"{COURSE_FOLDER}/{registry.RUBRIC_FILE}"] = json.dumps(
            registry.rubric_of(spec.info), indent=2) + "\n"
    return files


def write_kit(assignment: str, destination: Path) -> list[Path]:
    """Write the kit into ``destination``, and nowhere else (``ValueError`` for a path that
    would lead out of it)."""
    files = kit_files(assignment)
    root = destination.resolve()
    for relative in files:
        if not (root / relative).resolve().is_relative_to(root):
            raise ValueError(f"the kit's file {relative!r} would be written outside {destination}")
    written = []
    for relative, text in files.items():
        path = destination / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
