"""The feedback a student reads: the line it points at, the fix, the first screen, the notes.

A fixture whose mistake sits on one unambiguous line says so in its last line,
``# where: ID=LINE ...``; the report must quote exactly that line. Every quoted line, on any
fixture, must be the submission's own text at that place.

The fixtures' reports come from the session's ``graded`` (in this process unless
``--fixture-grading=sandbox``); ``test_in_process_grading_gives_the_sandboxs_report`` checks
that both ways give the same report. Tests that grade other code start the sandbox: ``e2e``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import sandbox
from grader.render import text

from .conftest import (
    IN_PROCESS_ERRORS,
    SUBMISSIONS,
    declared_error,
    expected_ids,
    grade_trusted,
    graded_as,
    notebook,
)

Graded = Callable[..., dict[str, Any]]
e2e = pytest.mark.e2e  # starts child processes: the slow tier

FIXTURES = sorted([*SUBMISSIONS.glob("*/*.py"), *SUBMISSIONS.glob("presets/*/*.py")])
# three mistakes, each with its line, the code to write instead, the fix and the numbers
FIRST_SCREEN_LINES = 32
#: words of attention that have no place in a softmax report
NOT_SOFTMAX = re.compile(r"K\.T|d_k|\bmask|quer(y|ies)|\bkeys?\b")


def where_lines(path: Path) -> dict[str, int]:
    last = path.read_text().rstrip().splitlines()[-1]
    if not last.startswith("# where:"):
        return {}
    return {item.split("=")[0]: int(item.split("=")[1]) for item in last.split(":", 1)[1].split()}


LOCATED = [p for p in FIXTURES if where_lines(p)]


def test_enough_fixtures_pin_their_line() -> None:
    pinned = {i for p in LOCATED for i in where_lines(p)}
    assert len(LOCATED) >= 40 and len(pinned) >= 28


@pytest.mark.parametrize("path", LOCATED, ids=[f"{p.parent.name}/{p.stem}" for p in LOCATED])
def test_report_quotes_the_line_of_each_mistake(path: Path, graded: Graded) -> None:
    report = graded(path)
    lines = path.read_text().splitlines()
    found = {m["id"]: m.get("location") for m in report["misconceptions"]}
    for misconception, line in where_lines(path).items():
        location = found[misconception]
        assert location is not None, misconception
        assert location["line"] == line, (misconception, location)
        assert location["code"] == lines[line - 1].strip()


@pytest.mark.parametrize("path", FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES])
def test_every_finding_has_a_fix_and_the_first_screen_is_short(path: Path, graded: Graded) -> None:
    report = graded(path)
    lines = path.read_text().splitlines()
    first_screen = text.summary(report)
    assert len(first_screen) <= FIRST_SCREEN_LINES, "\n".join(first_screen)
    shown = "\n".join(first_screen)
    for item in report["misconceptions"]:
        literal = (item.get("location") or {}).get("fixed")  # (shown instead of the sentence)
        assert item["fix"] and (literal or " ".join(item["fix"].split()) in " ".join(
            shown.split()))
        if item.get("location"):  # never a line that is not the submission's own
            assert item["location"]["code"] == lines[item["location"]["line"] - 1].strip()
            assert item["location"]["code"] in shown
    if path.parent.name == "softmax":
        assert not NOT_SOFTMAX.search(text.render(report)), path
    if not expected_ids(path) and not declared_error(path):
        assert "What to fix" not in shown


@e2e
def test_a_notebook_finding_names_its_code_cell(grade_source) -> None:
    buggy = (SUBMISSIONS / "attention" / "scale_by_dk.py").read_text()
    report = grade_source(notebook(("markdown", "# Part 1"), "import numpy as np", buggy),
                          "work.ipynb")
    (item,) = report["misconceptions"]
    assert item["location"]["cell"] == 2
    assert item["location"]["code"] == "scores = Q @ np.swapaxes(K, -1, -2) / d_k"
    assert "code cell 2, line 7" in text.render(report)


@e2e
def test_a_cell_that_does_not_touch_the_grade_is_a_note_after_it(grade_source) -> None:
    correct = (SUBMISSIONS / "attention" / "correct_matmul.py").read_text()
    report = grade_source(notebook(correct, "import matplotlib_is_not_here",
                                   "plt.plot([1, 2])"), "plots.ipynb")
    assert report["score"] == report["max_score"]
    # (a package the graded code never needed gets no note at all: issue 34)
    (error,) = report["errors"]
    assert error["kind"] == "runtime-error" and error["affects_grade"] is False
    shown = text.render(report)
    assert "What to fix" not in shown
    assert shown.index("Score:") < shown.index("Notes (these did not change your score)")
    # the student's page: how staff add a package to the grader is the README's, not this
    assert "gradescope-zip" not in shown and "`packages`" not in shown


@e2e
def test_a_cell_error_that_may_have_cost_marks_stays_an_error(grade_source) -> None:
    cells = ["import torch_is_not_here as torch\nimport numpy as np",
             "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
             "    return torch.softmax(Q @ K.T, -1) @ V"]
    report = grade_source(notebook(*cells), "uses_torch.ipynb")
    assert report["errors"][0]["kind"] == "missing-dependency"
    assert all(e.get("affects_grade", True) for e in report["errors"])
    assert "What to fix" in text.render(report)


@e2e
@pytest.mark.parametrize("trick", [
    "import sys\n    sys.settrace(None)\n",  # switches the recorder off
    "import sys\n    if sys.gettrace() is not None:\n        raise RuntimeError('traced')\n",
])
def test_tracing_cannot_change_a_verdict(grade_source, trick: str) -> None:
    """The traced call only picks the line to quote: code that notices or stops it keeps its
    score and its misconceptions."""
    buggy = (SUBMISSIONS / "attention" / "scale_by_dk.py").read_text()
    plain = grade_source(buggy)
    tricked = grade_source(buggy.replace("    d_k = Q.shape[-1]\n",
                                         f"    {trick}    d_k = Q.shape[-1]\n"))
    assert tricked["score"] == plain["score"]
    assert [m["id"] for m in tricked["misconceptions"]] == ["scale-by-dk"]


NUMBERS = re.compile(r"At index \(([\d, ]*)\): yours (\S+), correct (\S+), with this mistake "
                     r"(?:alone (\S+), with (?:both|all \d) of your mistakes )?(\S+)\.")
MASK_IDS = {"mask-after-softmax", "mask-zero-fill", "mask-inverted", "mask-ignored",
            "mask-transposed", "mask-as-additive-bias", "mask-misbroadcast"}
NAMED = [p for p in FIXTURES if expected_ids(p)]


@pytest.mark.parametrize("path", NAMED, ids=[f"{p.parent.name}/{p.stem}" for p in NAMED])
def test_each_findings_evidence_shows_that_finding(path: Path, graded: Graded) -> None:
    """The numbers tell the mistake apart from the correct answer, the call that reproduces
    them has what the mistake needs (a mask for a masking mistake), and running it gives the
    number quoted as yours (a course's code called through ``grader.reproduce``, as its
    interface says)."""
    import numpy as np

    report = graded(path)
    module: dict = {"__name__": "fixture"}
    exec(compile(path.read_text(), str(path), "exec"), module)
    for item in report["misconceptions"]:
        evidence = item["evidence"]
        numbers = NUMBERS.search(evidence)
        if numbers is None:
            continue
        at, yours, correct, alone, mistaken = numbers.groups()
        if alone is not None:  # one of several: its own part differs from the answer too
            assert float(alone) != pytest.approx(float(correct), rel=1e-4), item["id"]
        assert float(mistaken) != pytest.approx(float(correct), rel=1e-4), item["id"]
        if yours.startswith("("):  # "(shape differs)": no number of yours to find
            continue
        call = evidence.split("Reproduce it with:\n", 1)[1]
        if item["id"] in MASK_IDS:
            assert "mask" in call.splitlines()[-1] or call.count(",") > 3, call
        *setup, last = call.splitlines()
        space = dict(module)
        exec("\n".join(setup), space)
        with np.errstate(all="ignore"):
            result = eval(last, space)
        output = np.asarray(result[0] if isinstance(result, tuple) else result, dtype=float)
        if "masks read as 1 where" in evidence and (output <= -1e4).any():  # additive mask
            output = (output == 0).astype(float)
        index = tuple(int(i) for i in at.split(",") if i.strip())
        got = float(output[index])
        assert got == pytest.approx(float(yours), rel=1e-5, abs=1e-6, nan_ok=True), item["id"]


@pytest.mark.parametrize("fixture,named,not_named", [
    ("no_batch_support.py", ["`K.T`"], ["np.dot", "shape[1]", "axis=1"]),
    ("no_batch_support_helper_axis1.py", ["`K.T`", "`np.dot`"], ["axis=1` instead"]),
    ("no_batch_support_einsum.py", ["ValueError"], ["K.T", "shape[1]", "axis="]),
])
def test_code_that_works_on_2d_inputs_only_is_told_about_its_own_failing_line(
        fixture: str, named: list[str], not_named: list[str], graded: Graded) -> None:
    """The line quoted is the one the first batched call failed on, and its fix names what that
    line does (never a pattern the code does not use); every other line of the functions that
    works on 2-D inputs only comes with its own fix."""
    path = SUBMISSIONS / "attention" / fixture
    [finding] = graded(path)["misconceptions"]
    for words in named:
        assert words in finding["fix"], finding["fix"]
    for words in not_named:
        assert words not in finding["fix"], finding["fix"]
    lines = path.read_text().splitlines()
    for other in finding["location"].get("also", []):
        assert other["code"] == lines[other["line"] - 1].strip()
        assert re.search(r"\.T\b|axis=1|shape\[1\]|np\.dot", other["code"])


@pytest.mark.parametrize("fixture", ["attention/no_batch_support.py",
                                     "attention/combo_2d_only_dk.py"])
def test_the_counts_agree_and_the_checks_say_an_error_once(fixture: str,
                                                           graded: Graded) -> None:
    """The errors count the same calls as the checks (23 of 27 beside 4 / 25 was two counts of
    one thing), and a check refers to the error instead of printing it again."""
    report = graded(SUBMISSIONS / fixture)
    [error] = [e for e in report["errors"] if e["kind"] == "runtime-error"]
    counted = re.match(r"(\d+) of (\d+) calls failed", error["message"])
    returns = next(c for c in report["checks"] if c["id"] == "returns-arrays")
    returned = re.match(r"(\d+) / (\d+) calls returned", returns["message"])
    assert counted and returned
    failed, made = int(counted[1]), int(counted[2])
    assert int(returned[2]) == made and int(returned[1]) == made - failed
    exception = error["message"].strip().splitlines()[-1]
    assert not [c["id"] for c in report["checks"] if exception in c["message"]]


def test_a_result_thrown_away_just_above_the_quoted_line_is_pointed_out(
        graded: Graded) -> None:
    """``np.swapaxes(x, -2, -3)`` alone on its line keeps nothing: the fix says so and how to
    keep it, before the row's own sentence."""
    path = SUBMISSIONS / "multi_head_attention" / "merge_transpose_thrown_away.py"
    [finding] = graded(path)["misconceptions"]
    assert finding["fix"].startswith("Line 17, `np.swapaxes(x, -2, -3)`, computes a new array "
                                     "and throws it away"), finding["fix"]
    assert "`x = np.swapaxes(x, -2, -3)`" in finding["fix"]
    plain = graded(SUBMISSIONS / "multi_head_attention" / "merge_without_transpose.py")
    assert "throws it away" not in plain["misconceptions"][0]["fix"]


FRAMEWORK_FIXTURES = sorted((SUBMISSIONS / "frameworks").glob("*/torch_*.py"))


@pytest.mark.parametrize("path", FRAMEWORK_FIXTURES, ids=[p.stem for p in FRAMEWORK_FIXTURES])
def test_a_fix_speaks_the_submissions_framework_and_names(path: Path, graded: Graded) -> None:
    """torch code is told its fix in torch (a NumPy call pasted into it raised a TypeError),
    with its own names of the arguments."""
    report = graded(path)
    told = " ".join(" ".join((m["fix"], m["explanation"])) for m in report["misconceptions"])
    assert report["misconceptions"] and "np." not in told, told
    if "attn_mask" in path.read_text():
        assert "`torch.where(attn_mask, scores, float('-inf'))`" in told, told


SNAPSHOTS = Path(__file__).parent / "snapshots"
SNAPSHOTTED = ["attention/combo_dk_inverted.py", "attention/mask_ignored.py",
               "multi_head_attention/combo_dmodel_no_wo.py", "softmax/unstable.py",
               "attention/correct_matmul.py"]


@pytest.mark.parametrize("fixture", SNAPSHOTTED)
def test_full_text_report_is_the_one_reviewed(fixture: str, graded: Graded) -> None:
    """Whole reports as a student reads them, reviewed by reading the files in
    tests/snapshots/; after a deliberate change, ``UPDATE_SNAPSHOTS=1 pytest -k snapshot``
    rewrites them, and the diff is reviewed like code."""
    import os

    path = SUBMISSIONS / fixture
    shown = text.render(graded(path))
    saved = SNAPSHOTS / (fixture.replace("/", "__").removesuffix(".py") + ".txt")
    if os.environ.get("UPDATE_SNAPSHOTS"):
        saved.parent.mkdir(exist_ok=True)
        saved.write_text(shown)
    assert shown == saved.read_text()


UNEXPLAINED = sorted((SUBMISSIONS / "unexplained").glob("*/*.py"))


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("path", UNEXPLAINED, ids=[f"{p.parent.name}/{p.stem}" for p in UNEXPLAINED])
def test_a_mistake_no_misconception_explains_is_located_to_its_stage(
        path: Path, seed: int, graded: Graded) -> None:
    """Unmodelled mistakes (``# located: STAGE``): nothing is named, and the report says in which
    stage the computation first goes wrong, on the line that computes it, with numbers."""
    stage = path.read_text().splitlines()[0].split(":", 1)[1].strip()
    report = graded(path, seed=seed)
    assert report["misconceptions"] == [] and report["score"] < report["max_score"]
    located = report["located"]
    assert located["stage"] == stage
    assert "yours is" in located["message"] and "the correct value" in located["message"]
    location = located["location"]
    assert location["code"] == path.read_text().splitlines()[location["line"] - 1].strip()
    assert "Where it first goes wrong" in text.render(report)


#: every fixture, on the public probes, and the hidden seed the unexplained ones are graded on
GRADED_RUNS = [*((p, 0) for p in sorted(SUBMISSIONS.rglob("*.py"))), *((p, 3) for p in UNEXPLAINED)]
#: what describes the run, not the submission (as in bench/snapshot_reports.py)
VOLATILE = ("duration_seconds", "isolation", "stdout")


@pytest.fixture
def forked_runs() -> Iterator[None]:
    """Submissions run in forks of the pre-warmed server, as batch runs them and as
    bench/snapshot_reports.py compares reports: half the time of a fresh interpreter each
    (test_sandbox.py holds every guarantee both ways)."""
    sandbox.use_fork_server(True)
    yield
    sandbox.use_fork_server(False)


@e2e
@pytest.mark.parametrize("path,seed", GRADED_RUNS,
                         ids=[f"{p.relative_to(SUBMISSIONS).with_suffix('')}@{s}"
                              for p, s in GRADED_RUNS])
def test_in_process_grading_gives_the_sandboxs_report(path: Path, seed: int,
                                                      forked_runs: None) -> None:
    """The tests that read the fixtures' reports grade them in this process unless told
    otherwise (``--fixture-grading``): for every fixture, the report is the one ``grade`` gives
    through the sandbox, field for field, but for what describes the run."""
    here = graded_as(path, seed=seed, mode="inprocess")
    there = graded_as(path, seed=seed, mode="sandbox")
    in_process = declared_error(path) in (None, *IN_PROCESS_ERRORS)
    assert ("none: in-process" in here["metadata"]["isolation"]) == in_process
    for report in (here, there):
        for key in VOLATILE:
            report["metadata"].pop(key, None)
    assert here == there


def test_a_correct_submission_is_never_located(graded: Graded) -> None:
    report = graded(SUBMISSIONS / "multi_head_attention" / "correct_head_loop.py")
    assert report["score"] == report["max_score"] and "located" not in report


def test_nothing_is_located_when_every_stage_is_right_but_the_output_is_not() -> None:
    """The flash backward's stages end with dV, not the returned output: code that computes
    every stage right and returns something else has no stage to point at (this indexed past
    the last stage and raised IndexError)."""
    from grader.core.assignments import get
    from grader.core.divergence import OPTIONAL, first_divergence
    from grader.core.locate import stages_of
    from grader.model import CallOutcome, TracedValue

    spec = get("flash_attention_backward")
    probe = next(p for p in spec.probes(0) if p.traced)
    stages = {name: value for name, value in stages_of(spec, {}, probe).items()
              if name not in OPTIONAL}
    assert "output" not in stages and len(stages) >= 3
    traced = tuple(TracedValue(None, line, 0, value)
                   for line, value in enumerate(stages.values(), start=10))
    right = spec.reference_on(probe)
    outputs = {name: np.asarray(value) * (2.0 if i == 0 else 1.0)
               for i, (name, value) in enumerate(zip(("dQ", "dK", "dV"), right))}
    outcome = CallOutcome(probe.id, outputs=outputs, traced=traced)
    assert first_divergence(spec, [probe], [outcome], ("",)) is None
    # the last stage wrong is still located
    wrong = (*traced[:-1], TracedValue(None, traced[-1].line, 0, traced[-1].array * 3.0))
    found = first_divergence(spec, [probe], [CallOutcome(probe.id, outputs=outputs,
                                                         traced=wrong)], ("",))
    assert found is not None and found.stage == list(stages)[-1]


def test_the_notebook_self_check_points_at_the_same_lines() -> None:
    """In a kernel, ``check(fn)`` runs the student's function here, traced the same way: the
    lines of the file (the cell) that defines it are quoted as the command line quotes them."""
    import runpy

    from grader import check

    path = SUBMISSIONS / "attention" / "combo_dk_inverted.py"
    function = runpy.run_path(str(path))["scaled_dot_product_attention"]
    feedback = check(function, display=False)
    found = {m["id"]: m["location"]["line"] for m in feedback.report["misconceptions"]}
    assert found == where_lines(path)
    assert "Shows first in line 7" in feedback._repr_html_()


@e2e
def test_a_file_that_runs_out_of_memory_while_loading_says_so_first(grade_source) -> None:
    """The memory limit reached while loading (a large library, a large array at the top
    level) is the error to fix, with how; the missing function it causes comes after."""
    from grader.config import Limits

    source = ("import numpy as np\nbig = np.ones((400, 1024, 1024))\n\n"
              "def scaled_dot_product_attention(Q, K, V, mask=None):\n    return Q\n")
    report = grade_source(source, assignment="attention", limits=Limits(memory_mb=1024))
    first, then = report["errors"][:2]
    assert first["kind"] == "memory-limit" and then["kind"] == "missing-function"
    assert "memory limit of 1024 MB" in first["message"] and "--memory-mb" in first["message"]
    assert "loading stopped at the error above" in then["message"]
    shown = text.render(report)
    assert shown.index("memory-limit") < shown.index("missing-function")


@e2e
def test_a_cell_that_reads_what_check_returns_still_runs_while_grading(grade_source) -> None:
    """Inside the grader the notebook's self-check is skipped; what it returns can still be
    read (`fb = check(...); fb.passed`), so the cell is no note and costs nothing."""
    correct = (SUBMISSIONS / "attention" / "correct_matmul.py").read_text()
    reading = ("from grader import check\nfb = check(scaled_dot_product_attention)\n"
               "print(fb.passed, fb.score, len(fb.misconceptions), fb.report.get('score'))\n"
               "if not fb.passed:\n    print('keep going')")
    report = grade_source(notebook(correct, reading), "reads_feedback.ipynb")
    assert report["score"] == report["max_score"] and report["errors"] == []


def _same_as_written(computed: np.ndarray, stage: np.ndarray) -> bool:
    """``same`` for same-shaped arrays, as its contract reads: values at or below the blocked
    threshold count as -inf, and the tolerance is allclose's, with atol scaled by the stage's
    largest finite |value| (at least 1)."""
    from grader.core.locate import BLOCKED_BELOW

    a = np.where(computed <= BLOCKED_BELOW, -np.inf, computed)
    b = np.where(stage <= BLOCKED_BELOW, -np.inf, stage)
    finite = np.abs(b[np.isfinite(b)])
    scale = max(float(finite.max()) if finite.size else 1.0, 1.0)
    return bool(np.allclose(a, b, rtol=1e-5, atol=1e-7 * scale, equal_nan=True))


def test_a_traced_value_is_matched_with_a_stage_as_allclose_would() -> None:
    """The fast comparison of a traced value with a stage (which places every quoted line)
    agrees with the plain one on every kind of value: close and not, NaN, infinities, blocked
    (masked) scores, large and tiny magnitudes, empty arrays."""
    from grader.core.locate import same

    rng = np.random.default_rng(5)
    cases = []
    for scale in (1e-6, 1.0, 1e4):
        base = rng.normal(size=(3, 4)) * scale
        cases += [(base, base), (base + 1e-9, base), (base * (1 + 1e-3), base),
                  (-base, base), (base, base + 1e-6 * scale)]
    for special in (np.nan, np.inf, -np.inf, -1e9):
        other = rng.normal(size=(2, 3))
        marked = other.copy()
        marked[0, 1] = special
        cases += [(marked, other), (other, marked), (marked, marked.copy())]
    blocked = rng.normal(size=(2, 3))
    blocked[1, 2] = -1e9
    cases += [(np.where(blocked < -1e4, -1e10, blocked), blocked),
              (np.zeros((0, 3)), np.zeros((0, 3)))]
    for computed, stage in cases:
        assert same(computed, stage) == _same_as_written(computed, stage), (computed, stage)


def test_placing_a_mistake_keeps_no_array_afterwards(grading_mode: str) -> None:
    """What the placing of a mistake memoises holds the arrays it compared; it is emptied when
    the placing ends, so nothing of one submission stays in the grader for the next."""
    from grader.core import locate

    report = grade_trusted(SUBMISSIONS / "attention" / "scale_by_dk.py", "attention",
                           mode=grading_mode)
    assert any(m.get("location") for m in report["misconceptions"])
    assert locate._SAME == {}


def test_the_tracer_records_every_change_made_in_place(tmp_path: Path) -> None:
    """An array changed in place is a new value on the line that changed it, each time (code
    that fills an array row by row computes a stage per row); a test input changed in place is
    said once, as such, and its change back to what came in is no new value; an array left as
    it was is recorded once, however many lines run while it is alive. (Unchanged arrays are
    told from their bytes: this pins down that the shortcut misses no change.)"""
    from grader.sandbox import trace as tracing

    source = textwrap.dedent("""\
        import numpy as np
        def f(x):
            out = np.zeros((2, 3))
            keep = np.ones(3)
            out[0] = x[0] * 2
            out[1] = x[1] * 2
            out[0] = 0.0
            x *= 0.5
            x *= 2.0
            return out
        """)
    path = tmp_path / "student.py"
    path.write_text(source)
    namespace: dict[str, Any] = {}
    exec(compile(source, str(path), "exec"), namespace)
    x = np.arange(6.0).reshape(2, 3)
    values = tracing.traced(lambda args: namespace["f"](*args), [x], lambda f: f == str(path))
    recorded = [(line, name, np.asarray(array).tolist()) for _, line, _, name, array, _ in values]
    zero = [0.0, 0.0, 0.0]
    assert recorded == [
        (3, "out", [zero, zero]),
        (4, "keep", [1.0, 1.0, 1.0]),
        (5, "out", [[0.0, 2.0, 4.0], zero]),
        (6, "out", [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]),
        (7, "out", [zero, [6.0, 8.0, 10.0]]),
        (8, tracing.CHANGED_INPUT, [[0.0, 0.5, 1.0], [1.5, 2.0, 2.5]]),
        (10, "<return>", [zero, [6.0, 8.0, 10.0]]),
    ]
    # the entries of one array changed in place share its first entry's chain
    chains = [chain for *_, chain in values]
    assert chains[0] == chains[2] == chains[3] == chains[4] != chains[1]
    assert len(set(chains[5:]) | set(chains[:5])) == 4


# --- real positional encodings and causal masks, as found (issue 33, items 5 and 6) ---

PE_FIXTURES = SUBMISSIONS / "positional_encoding"


@pytest.mark.parametrize("name", ["exponent_pair_twice_loops", "exponent_feature_tutorial_loops"])
def test_a_fix_of_the_cos_line_also_fixes_the_sin_line(name: str, graded: Graded) -> None:
    """A loop that writes the sine and the cosine of a pair on two lines writes the exponent's
    mistake on both: the fix rewrites both, and is checked on the student's code as such."""
    path = PE_FIXTURES / f"{name}.py"
    lines = path.read_text().splitlines()
    (finding,) = graded(path)["misconceptions"]
    location = finding["location"]
    sin_line = next(i for i, line in enumerate(lines, 1) if "sin(" in line)
    assert [other["line"] for other in location.get("also", [])] == [sin_line]
    assert location["fixed"] and location["also"][0]["fixed"] and location.get("checked")


UNEXPLAINED_PE = sorted((SUBMISSIONS / "unexplained" / "positional_encoding").glob("*.py"))


@pytest.mark.parametrize("path", UNEXPLAINED_PE, ids=[p.stem for p in UNEXPLAINED_PE])
def test_a_value_is_quoted_only_as_its_line_left_it(path: Path, graded: Graded) -> None:
    """An array filled or turned into sines in place is quoted as the code left it, never as the
    zeros it was allocated with nor as the angles it held before ``np.sin``: the number said
    to be the output is the output's."""
    located = graded(path)["located"]
    code = located["location"]["code"]
    assert "zeros" not in code and "np.array(" not in code
    match = re.search(r"at index \((\d+), (\d+)\) yours is ([-\d.e]+)", located["message"])
    assert match is not None
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    sizes = re.search(r"n_positions=(\d+), d_model=(\d+)", str(graded(path)["checks"]))
    assert sizes is not None  # the smallest failing call: the traced one the message reads
    output = namespace["positional_encoding"](int(sizes[1]), int(sizes[2]))
    assert float(match[3]) == pytest.approx(output[int(match[1]), int(match[2])], abs=1e-5)


CAUSAL_NO_KEY = sorted((SUBMISSIONS / "causal_self_attention").glob("mask_[bi]*_*.py"))


@pytest.mark.parametrize("path", CAUSAL_NO_KEY, ids=[p.stem for p in CAUSAL_NO_KEY])
def test_a_causal_mistakes_evidence_is_not_read_from_a_row_left_without_keys(
        path: Path, graded: Graded) -> None:
    """The row the broken mask leaves without any key (the first with the diagonal blocked, the
    last inverted) computes its fill value's whatever: the evidence quotes another row."""
    (finding,) = graded(path)["misconceptions"]
    evidence = finding["evidence"]
    assert "nan" not in evidence.lower()
    row = int(re.search(r"index \((\d+),", evidence)[1])  # type: ignore[index]
    assert row != (0 if "blocks_self" in path.stem else 3)
