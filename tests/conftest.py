"""Shared helpers: grade through the public API and check every report against the schema.

Fixtures (``tests/submissions/``) are graded through ``graded``: once per session, in this
process (``grader.notebook.grade_file``) or, with ``--fixture-grading=sandbox``, through the
sandbox as ``grader.grade`` runs them; ``test_feedback.py`` checks that both give the same
report. A fixture that imports a framework not installed here is skipped (see tests/README.md).
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

# One thread per math library in this process, as in the sandbox's child (processes.py): the
# fixtures graded here are small, and idle OpenMP threads spinning after each torch call cost
# the fast tier a third of its CPU on a loaded machine. Set before any test imports torch.
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from grader import grade  # noqa: E402
from grader.core.report import validate  # noqa: E402

HERE = Path(__file__).parent
SUBMISSIONS = HERE / "submissions"


FRAMEWORK_MODULE = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax"}
#: what a fixture may be graded with: see ``pytest_addoption``
GRADING_MODES = ("inprocess", "sandbox")
#: the error kinds a fixture may declare (``# error: KIND``) and still be graded in-process: they
#: come from the calls themselves; the others (a timeout, the memory limit, ...) only the
#: sandbox reports, so such fixtures are graded there whatever the option says
IN_PROCESS_ERRORS = frozenset({"wrong-signature", "wrong-shape", "runtime-error",
                               "non-finite-output"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fixture-grading", choices=GRADING_MODES, default="inprocess",
        help="how tests that read the reports of the fixtures in tests/submissions grade them: "
             "in this process (default, fast: they are our own code) or through the sandbox, "
             "as `grader.grade` does (those tests then count as e2e)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With the fixtures graded through the sandbox, a test that reads their reports starts
    child processes: it is then part of the slow tier (``-m "not e2e"`` leaves it out). A test
    run over many fixtures is marked ``breadth`` for the fixtures outside the fast tier's
    sample (``fast_sample``) and for every seed but 0. The tests that start child processes
    run last, when no worker grades ahead any more (``pytest_runtest_setup``)."""
    sandboxed = config.getoption("fixture_grading") == "sandbox"
    for item in items:
        if sandboxed and "grading_mode" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)
        if _beyond_the_sample(item):
            item.add_marker(pytest.mark.breadth)
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)


def _beyond_the_sample(item: pytest.Item) -> bool:
    """Is the test one fixture's case of a test run over many, on a fixture outside the sample
    or at a seed other than 0?"""
    params = getattr(getattr(item, "callspec", None), "params", {})
    fixtures = [_fixture_path(value) for value in params.values()
                if isinstance(value, (str, Path))]
    fixtures = [path for path in fixtures if path is not None]
    if not fixtures:
        return False
    return params.get("seed", 0) != 0 or any(path not in fast_sample() for path in fixtures)


@functools.cache
def _fixture_path(value: str | Path) -> Path | None:
    """``value`` as a fixture's path (a Path, or a name relative to tests/submissions)."""
    if isinstance(value, str) and value.endswith(".py"):
        value = SUBMISSIONS / value
    if isinstance(value, Path) and value.suffix == ".py" and HERE in value.resolve().parents \
            and value.is_file():
        return value.resolve()
    return None


@functools.cache
def fast_sample() -> frozenset[Path]:
    """The fixtures the fast tier grades: each folder's first correct one, and enough others to
    show every misconception once (NumPy code first, then in name order: a course's own
    fixtures add only what the plain assignments' do not show)."""
    fixtures = sorted(HERE.glob("**/*.py"), key=lambda path: (bool(imported_frameworks(path)),
                                                              path))
    chosen: set[Path] = set()
    shown: set[str] = set()
    folders_with_correct: set[Path] = set()
    for path in fixtures:
        first = path.read_text().split("\n", 1)[0]
        if not first.startswith("# expect:"):
            continue
        ids = set(first.split(":", 1)[1].split())
        if ids - shown or (not ids and path.parent not in folders_with_correct):
            chosen.add(path.resolve())
            shown |= ids
            if not ids:
                folders_with_correct.add(path.parent)
    return frozenset(chosen)


@functools.cache
def imported_frameworks(path: Path) -> frozenset[str]:
    """The frameworks (torch, tensorflow, jax) a fixture's source imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return frozenset(found & set(FRAMEWORK_MODULE))


def missing_frameworks(assignment: str, path: Path | None = None) -> list[str]:
    """The frameworks not installed here that grading needs: the one whose arrays the
    assignment's interface hands in, and those the fixture at ``path`` imports."""
    from grader import registry

    wanted = set(imported_frameworks(path)) if path is not None else set()
    arrays = FRAMEWORK_MODULE.get(registry.get(assignment).interface.arrays)
    if arrays:
        wanted.add(arrays)
    return sorted(m for m in wanted if importlib.util.find_spec(m) is None)


def needs_framework(assignment: str, path: Path | None = None) -> None:
    """Skip the test when grading needs a framework not installed here: the assignment's
    course hands in its arrays, or the fixture at ``path`` imports it."""
    missing = missing_frameworks(assignment, path)
    if missing:
        pytest.skip(f"{', '.join(missing)} is not installed here")


def gradable(path: Path, assignment: str | None = None) -> bool:
    """Can the fixture be graded here (every framework it needs is installed)?"""
    return not missing_frameworks(assignment or path.parent.name, path)


def declared_error(path: Path) -> str | None:
    """The error kind a fixture is written to get (its ``# error: KIND`` line), if any."""
    for line in path.read_text().splitlines()[1:4]:
        if line.startswith("# error:"):
            return line.split(":", 1)[1].strip()
    return None


def declared_failures(path: Path) -> list[str]:
    """The checks a correct fixture is written to fail (its ``# fails: CHECK ...`` second
    line: an exact computation that never tiles fails ``tiling`` alone)."""
    lines = path.read_text().splitlines()
    if len(lines) > 1 and lines[1].startswith("# fails:"):
        return sorted(lines[1].split(":", 1)[1].split("(")[0].split())
    return []


def expected_ids(path: Path) -> list[str]:
    """The misconceptions a fixture is written to show, from its `# expect:` first line."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect:"), path
    return sorted(first.split(":", 1)[1].split())


def grade_trusted(path: Path, assignment: str, seed: int = 0,
                  mode: str = "inprocess") -> dict[str, Any]:
    """Grade our own code (a fixture, or one edited by a test) as ``mode`` says: in this
    process (``grader.notebook.grade_file``: the report ``grade`` gives but for what describes
    the run) unless it declares an error only the sandbox reports, else through the sandbox.
    The report is schema-checked."""
    from grader.notebook import grade_file

    error = declared_error(path)
    if mode == "inprocess" and (error is None or error in IN_PROCESS_ERRORS):
        report = grade_file(path, assignment, seed=seed)
    else:
        report = grade(path, assignment=assignment, seed=seed)
    validate(report)
    return report


#: reports graded this session, by (fixture, assignment, seed, mode)
_GRADED: dict[tuple[Path, str, int, str], dict[str, Any]] = {}
#: reports being graded ahead by worker processes (``pytest_collection_finish``), same keys
_AHEAD: dict[tuple[Path, str, int, str], Future[dict[str, Any]]] = {}
#: fewer fixture gradings than this are made here, one by one, as tests ask
GRADE_AHEAD_FROM = 40


def pytest_collection_finish(session: pytest.Session) -> None:
    """Grade ahead, in as many worker processes as this machine has cores, the fixtures that
    the selected tests read through ``graded`` in-process, in the order the tests will ask:
    the tests then find most reports ready, graded on every core. A worker grades exactly as
    this process would (``grade_trusted``); the reports are the same (``test_feedback.py``
    compares them with the sandbox's)."""
    if session.config.getoption("fixture_grading") != "inprocess":
        return
    wanted = dict.fromkeys(key for item in session.items for key in _reads(item))
    if len(wanted) < GRADE_AHEAD_FROM:
        return
    pool = ProcessPoolExecutor(max_workers=os.cpu_count() or 1,
                               mp_context=multiprocessing.get_context("spawn"))
    for key in wanted:
        path, assignment, seed, mode = key
        _AHEAD[key] = pool.submit(grade_trusted, path, assignment, seed, mode)
    _POOL.append(pool)
    session.config.add_cleanup(_stop_grading_ahead)


#: the pool grading ahead, while it runs
_POOL: list[ProcessPoolExecutor] = []


def _stop_grading_ahead() -> None:
    """Wait for the gradings under way, cancel the others (graded here if a test asks)."""
    for pool in _POOL:
        pool.shutdown(wait=True, cancel_futures=True)
    _POOL.clear()
    for key in [key for key, future in _AHEAD.items() if future.cancelled()]:
        del _AHEAD[key]


def _graded_ahead(key: tuple[Path, str, int, str]) -> dict[str, Any] | None:
    """A worker's report for ``key``, or None (not asked of a worker, or the pool broke: a
    worker that died is no verdict on the fixture, which is then graded here)."""
    ahead = _AHEAD.pop(key, None)
    try:
        return ahead.result() if ahead is not None else None
    except BrokenProcessPool:
        return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    """The tests that start child processes (run last) find only their own: the workers
    grading ahead are gone by then."""
    if _POOL and item.get_closest_marker("e2e") is not None:
        _stop_grading_ahead()


def _reads(item: pytest.Item) -> list[tuple[Path, str, int, str]]:
    """The in-process gradings a test case asks ``graded`` for that a worker can make: its
    fixture parameters on its seed, each fixture gradable here and graded in-process."""
    if "graded" not in getattr(item, "fixturenames", ()):
        return []
    params = getattr(getattr(item, "callspec", None), "params", {})
    seed = params.get("seed", 0)
    paths = [_fixture_path(v) for v in params.values() if isinstance(v, (str, Path))]
    return [(path, path.parent.name, seed, "inprocess") for path in paths
            if path is not None and _gradable_in_process(path)]


def _gradable_in_process(path: Path) -> bool:
    """A fixture of a shipped assignment (its folder's name), gradable here, in-process."""
    from grader import registry

    error = declared_error(path)
    return (path.parent.name in registry.ids() and path.read_text().startswith("# expect:")
            and gradable(path) and (error is None or error in IN_PROCESS_ERRORS))


def graded_as(path: Path, assignment: str | None = None, seed: int = 0, *,
              mode: str) -> dict[str, Any]:
    """The fixture's report, graded once per session (a deep copy: change it freely); the
    test is skipped where a framework it needs is missing. ``assignment``: the fixture's folder
    unless given."""
    assignment = assignment or path.parent.name
    needs_framework(assignment, path)
    key = (path.resolve(), assignment, seed, mode)
    if key not in _GRADED:
        _GRADED[key] = _graded_ahead(key) or grade_trusted(path, assignment, seed, mode)
    return copy.deepcopy(_GRADED[key])


@pytest.fixture(scope="session")
def grading_mode(request: pytest.FixtureRequest) -> str:
    """``--fixture-grading``: "inprocess" or "sandbox"."""
    return str(request.config.getoption("fixture_grading"))


@pytest.fixture(scope="session")
def graded(grading_mode: str) -> Callable[..., dict[str, Any]]:
    """``graded(path, assignment=None, seed=0)``: the fixture's report, graded once per session
    as ``--fixture-grading`` says (see ``graded_as``)."""
    return functools.partial(graded_as, mode=grading_mode)


@pytest.fixture
def grade_source(tmp_path: Path):
    """Write source text to a file and grade it; the report is schema-checked."""

    def run(source: str, name: str = "submission.py", **options: Any) -> dict[str, Any]:
        path = tmp_path / name
        path.write_text(source)
        report = grade(path, **options)
        validate(report)
        return report

    return run


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True,
                          text=True, timeout=timeout)


def notebook(*cells: str | tuple[str, str], nbformat: int = 4) -> str:
    """A minimal notebook JSON; a cell is source text (code) or (cell_type, source)."""
    made = []
    for cell in cells:
        kind, source = ("code", cell) if isinstance(cell, str) else cell
        entry: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            entry.update(execution_count=None, outputs=[])
        made.append(entry)
    return json.dumps({"cells": made, "metadata": {}, "nbformat": nbformat,
                       "nbformat_minor": 5})
