"""The import graph keeps the pipeline's shape: no circle, no arrow from a lower stage up to a
higher one, and the places users grade are thin adapters that do not lean on each other.

Read from the source with ``ast`` (imports inside functions count too), so no module runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("grader", "reference")

#: lower layers never import higher ones; modules of one group (core, sandbox, render,
#: reference) may import each other, without circles
LAYERS: dict[str, int] = {
    "grader.model": 0, "grader.files": 0, "grader.registry": 0, "grader.version": 0,
    "reference": 0,
    "grader.config": 1,
    "grader.core": 2, "grader.load": 2, "grader.sandbox": 2, "grader.render": 2,
    "grader.pipeline": 3, "grader.tasks": 3,
    "grader.cli": 4, "grader.batch": 4, "grader.class_report": 4, "grader.notebook": 4,
    "grader.pytest_plugin": 4, "grader.starter": 4,
    # the registry of formats, and each platform an adapter of its own
    "grader.platforms": 4, "grader.platforms.gradescope": 4, "grader.platforms.github": 4,
    "grader.platforms.prairielearn": 4, "grader.platforms.autolab": 4,
    "grader.platforms.coderunner": 4, "grader.platforms.codegrade": 4,
    "grader.platforms.coursera": 4, "grader.platforms.junit": 4,
    "grader": 5, "grader.launch": 5, "grader.__main__": 6,
}
GROUPS = ("grader.core", "grader.sandbox", "grader.render", "grader.tasks", "reference")
PLATFORMS = "grader.platforms"
#: adapters that call others: the command line dispatches (and offers the registry's formats),
#: batch reads Gradescope's export and writes its class report, the registry lists platforms
ADAPTER_EDGES = {("grader.cli", "grader.batch"), ("grader.cli", PLATFORMS),
                 ("grader.cli", "grader.platforms.gradescope"), ("grader.cli", "grader.starter"),
                 ("grader.batch", "grader.class_report"),
                 ("grader.batch", "grader.platforms.gradescope"),
                 *((PLATFORMS, name) for name in LAYERS if name.startswith(PLATFORMS + "."))}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found[_module_name(path)] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                targets.add(candidate if candidate in known else base)
    return {t for t in targets if t in known and t != name}


def graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _home(module: str) -> str:
    """The entry of ``LAYERS`` that ``module`` belongs to (its longest prefix)."""
    candidates = [key for key in LAYERS if module == key or module.startswith(key + ".")]
    assert candidates, f"{module} has no layer: add it to LAYERS"
    home = max(candidates, key=len)
    assert home != PLATFORMS or module == PLATFORMS, (
        f"{module} is a platform, an adapter of its own: add it to LAYERS at layer 4")
    return home


def test_every_module_has_a_layer() -> None:
    for module in graph():
        _home(module)


def test_no_import_goes_up_or_sideways() -> None:
    wrong = []
    for source, targets in graph().items():
        home = _home(source)
        for target in targets:
            there = _home(target)
            if home == there and home in GROUPS:
                continue
            if LAYERS[home] == LAYERS[there] == 4 and (home, there) in ADAPTER_EDGES:
                continue
            if LAYERS[home] <= LAYERS[there]:
                wrong.append(f"{source} -> {target}")
    assert wrong == []


def test_no_circle_of_imports() -> None:
    edges = graph()
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                circles.append([*trail[trail.index(target):], target])
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_the_checker_sees_a_circle_and_an_upward_arrow(tmp_path: Path) -> None:
    """The two checks above are not vacuous: on a planted package they fail."""
    package = tmp_path / "grader"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "model.py").write_text("from grader.core import probes\n")
    (package / "core" / "probes.py").write_text("import grader.model\n")
    modules = {_module_name_in(tmp_path, p): p for p in package.rglob("*.py")}
    known = set(modules)
    edges = {name: _imports(name, path, known) for name, path in modules.items()}
    assert edges["grader.model"] == {"grader.core.probes"}  # an upward arrow
    assert "grader.model" in edges["grader.core.probes"]  # and with it a circle


def _module_name_in(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("module", ["grader.registry", "grader.config", "grader.model",
                                    "grader.load", "grader.render", "grader.cli"])
def test_light_modules_do_not_load_numpy(module: str) -> None:
    """The command line, the registry and the renderers start without NumPy (it is imported
    while the child starts, see ``sandbox.run``)."""
    code = f"import sys, {module}; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


#: where a task is known by its name: its own modules, and the catalogue rows (data saying which
#: tasks a wrong choice occurs in)
TASK_HOMES = ("grader/tasks/", "reference/tasks/", "reference/rows/")


def _task_name_comparisons(path: Path, names: frozenset[str], root: Path = ROOT) -> list[str]:
    """The places in ``path`` that compare something with a task's name (``==``, ``!=``,
    ``in``, ``not in`` with a literal name, or a ``match`` case on one)."""

    def named(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(e) for e in node.elts)
        return False

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops) and \
                any(named(side) for side in (node.left, *node.comparators)) or isinstance(node, ast.MatchValue) and named(node.value):
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_code_outside_the_task_modules_compares_a_tasks_name() -> None:
    """Adding a task is adding its modules and data: no stage, no sandbox file, no platform
    branches on which task it grades (it asks the task record or the task's canonical call)."""
    from grader import registry

    names = frozenset(registry.canonical_calls())
    found = [place for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             if not str(path.relative_to(ROOT)).startswith(TASK_HOMES)
             for place in _task_name_comparisons(path, names)]
    assert found == []


def test_the_task_name_check_sees_a_comparison(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('if task == "rope" or name in ("softmax", "x"):\n    pass\n'
                       'match task:\n    case "attention":\n        pass\n')
    found = _task_name_comparisons(planted, frozenset({"rope", "softmax", "attention"}), tmp_path)
    assert len(found) == 3


def test_every_task_has_its_modules_its_canonical_call_and_its_rows() -> None:
    """The places a task lives agree: a module on each side, a built-in assignment with its
    canonical call, and catalogue rows that name it."""
    from grader import registry
    from grader.core.tasks import tasks
    from reference import catalogue
    from reference.tasks import MODULES

    named_by_rows = {t for row in catalogue.CATALOGUE for v in row.variants for t in v.tasks}
    assert set(tasks()) == set(MODULES) == set(registry.canonical_calls())
    assert named_by_rows <= set(tasks())
