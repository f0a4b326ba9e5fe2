"""Starter kits: what an instructor hands out for an assignment, made from the assignment's data.

``attention-grader starter ID --out DIR`` writes a ready template repository: a student README,
a starter notebook (stub, explanations, a check cell), a starter ``.py`` and the GitHub Classroom
workflow. The kits under ``assignments/<id>/starter/`` are this command's output (a test keeps
them identical).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from grader import registry
from grader.core.assignments import Assignment, get

#: where classrooms find the action; courses that fork the grader change this line
ACTION_REFERENCE = "attention-grader/attention-grader@v0"


def _docstring(spec: Assignment) -> str:
    bullets = "\n".join(textwrap.fill(c, 88, initial_indent="    - ", subsequent_indent="      ")
                        for c in spec.conventions)
    return f'    """{spec.summary}\n\n{bullets}\n    """'


def stub_source(spec: Assignment) -> str:
    """The function (or, in a course that asks for a class, the class) with its docstring and a
    body that says it is not written yet."""
    if spec.interface.kind == "class":
        construct, _, forward = spec.signature.partition(".forward")
        init = construct.split("(", 1)[1].rstrip(")")
        attributes = ", ".join(f"`{path}`" for path, _ in spec.interface.weights) or "none"
        return (f"class {spec.function}(nn.Module):\n{_docstring(spec)}\n\n"
                f"    def __init__(self, {init}):\n        super().__init__()\n"
                f"        # Your layers here; the grader sets these weights: {attributes}.\n\n"
                f"    def forward(self, {forward.strip('()')}):\n"
                f"        # Your code here: replace the line below.\n"
                f'        raise NotImplementedError("{spec.function}.forward is not implemented '
                f'yet")\n')
    return (f"def {spec.signature}:\n{_docstring(spec)}\n"
            f"    # Your code here: replace the line below.\n"
            f'    raise NotImplementedError("{spec.function} is not implemented yet")\n')


def imports(spec: Assignment) -> str:
    """The imports the course's interface works in."""
    arrays = spec.interface.arrays
    if arrays == "torch":
        return "import torch\nfrom torch import nn" if spec.interface.kind == "class" else \
            "import torch"
    if arrays == "tensorflow":
        return "import tensorflow as tf"
    if arrays == "jax":
        return "import jax.numpy as jnp"
    return "import numpy as np"


def check_option(spec: Assignment) -> str:
    """The command-line option naming the assignment, where it cannot be inferred."""
    return "" if spec.info.kind == "builtin" else f" --assignment {spec.id}"


def starter_py(spec: Assignment) -> str:
    return (f'"""Assignment `{spec.id}`: write `{spec.function}`.\n\n'
            f"Check your work with `attention-grader check {spec.id}.py{check_option(spec)}`.\n"
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
        _cell("code", f"from grader import check\n\ncheck({spec.function}"
                      + ("" if spec.info.kind == "builtin" else f", assignment={spec.id!r}")
                      + ")"),
    ]
    notebook = {"cells": cells,
                "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                            "name": "python3"},
                             "language_info": {"name": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    for index, cell in enumerate(cells):
        cell["id"] = f"{spec.id.replace('_', '-')}-{index}"
    return json.dumps(notebook, indent=1) + "\n"


def _packages_input(spec: Assignment) -> str:
    """The action's `packages` input: the framework the course's code is written in."""
    packages = registry.framework_packages(spec.interface)
    return f"\n          packages: {' '.join(packages)}" if packages else ""


def classroom_workflow(spec: Assignment) -> str:
    return f"""\
# GitHub Classroom autograding for `{spec.id}`: put this file at .github/workflows/classroom.yml
# in the assignment's template repository. Every push grades {spec.id}.ipynb and reports the
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
          submission: {spec.id}.ipynb
          assignment: {spec.id}{_packages_input(spec)}
      - name: Autograding Reporter
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
          GRADER_RESULTS: "${{{{ steps.grader.outputs.result }}}}"
        with:
          runners: grader
"""


def student_readme(spec: Assignment) -> str:
    conventions = "\n".join(f"- {c}" for c in spec.conventions)
    checks = "\n".join(f"| `{c['id']}` | {c['points']:g} |" for c in spec.rubric()["checks"])
    total = spec.rubric()["max_score"]
    return f"""\
# Assignment `{spec.id}`

{spec.summary}

## What to write

```python
{spec.signature}
```

{conventions}

Write it in `{spec.id}.ipynb` (or in `{spec.id}.py`, if you prefer a plain file). Any correct
style gets full marks: loops, `@`, `einsum`, float32, PyTorch tensors.

## Check your work, three ways

1. **Command line**: `attention-grader check {spec.id}.ipynb{check_option(spec)}` (or `{spec.id}.py`). It runs your
   code in an isolated process, compares it with a reference on many probes, and names the
   misconception behind any wrong answer, with the smallest input that shows it.
2. **In the notebook**: run the last cell, `from grader import check; check({spec.function})`.
3. **pytest**: `pytest --attention-submission {spec.id}.ipynb` turns every check into a test.

Install the grader once with `pip install` and the copy or repository address your course gives you
(the grader is not published on PyPI).
Every push to this repository is graded the same way by GitHub Classroom; open the run's summary
page for the feedback.

## How it is graded ({total:g} points)

| check | points |
|---|---|
{checks}

Reference checks give credit per probe that matches; the other checks are all or nothing. The
final grading uses probes with new values, so a correct function scores the same and memorised
outputs score nothing.
"""


def kit_files(assignment: str) -> dict[str, str]:
    """Relative path -> text of every file of the starter kit."""
    spec = get(assignment)
    return {
        "README.md": student_readme(spec),
        f"{assignment}.ipynb": starter_notebook(spec),
        f"{assignment}.py": starter_py(spec),
        ".github/workflows/classroom.yml": classroom_workflow(spec),
    }


def write_kit(assignment: str, destination: Path) -> list[Path]:
    written = []
    for relative, text in kit_files(assignment).items():
        path = destination / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
