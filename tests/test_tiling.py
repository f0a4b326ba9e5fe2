"""The ``tiling`` check of both tiled assignments (SPEC, "What tiled means for grading"): a
tiled submission passes it, one that materialises the n x m scores fails it and is told so, and
nothing else of its report changes; where nothing can be measured the check says why and costs
nothing. In-process here (the notebook's path), and through the sandbox (``e2e``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.core import tiling
from grader.core.assignments import get
from grader.notebook import grade_function, measure_tiling
from grader.sandbox import peak
from reference.tasks.flash_attention_backward import flash_attention_backward
from reference.tasks.flash_attention_forward import flash_attention_forward

from .conftest import SUBMISSIONS, needs_framework

TILED = {"flash_attention_forward": "correct_loops.py",
         "flash_attention_backward": "correct_key_outer.py"}
UNTILED = {"flash_attention_forward": "correct_untiled.py",
           "flash_attention_backward": "correct_untiled_softmax.py"}


def _tiling(report: dict[str, Any]) -> dict[str, Any]:
    [check] = [c for c in report["checks"] if c["id"] == tiling.CHECK_ID]
    return check


@pytest.mark.parametrize("assignment", sorted(TILED))
def test_a_tiled_submission_passes_and_an_untiled_one_is_told_it_materialises(
        assignment: str, graded: Any) -> None:
    tiled = graded(SUBMISSIONS / assignment / TILED[assignment])
    assert _tiling(tiled)["passed"] and "tile by tile" in _tiling(tiled)["message"]
    assert tiled["score"] == tiled["max_score"]
    untiled = graded(SUBMISSIONS / assignment / UNTILED[assignment])
    check = _tiling(untiled)
    assert not check["passed"] and check["points"] == 0
    assert "materialises the n x m score matrix" in check["message"]
    # nothing else changes: no misconception, every other check passed, one check's points lost
    assert untiled["misconceptions"] == []
    assert [c["id"] for c in untiled["checks"] if not c["passed"]] == [tiling.CHECK_ID]
    assert untiled["score"] == pytest.approx(untiled["max_score"] - check["max_points"])
    assert check["max_points"] <= 0.1 * untiled["max_score"]  # a small share of the points


def test_the_check_is_decided_from_the_traced_peak_against_the_bound() -> None:
    below = {"traced_peak": 2 << 20, "resident_growth": None, "frameworks": []}
    above = {"traced_peak": 40 << 20, "resident_growth": None, "frameworks": []}
    assert tiling.verdict(below)[:2] == (True, True)
    measured, passed, message = tiling.verdict(above)
    assert measured and not passed and "40.0 MiB" in message
    # torch: its allocations are invisible to tracemalloc; the resident set decides, or nothing
    torch_big = {"traced_peak": 0, "resident_growth": 90 << 20, "frameworks": ["torch"]}
    torch_unknown = {"traced_peak": 0, "resident_growth": None, "frameworks": ["torch"],
                     "why_not": "no fork could be made"}
    assert tiling.verdict(torch_big)[:2] == (True, False)
    measured, passed, message = tiling.verdict(torch_unknown)
    assert not measured and passed and "not measured" in message
    assert "no fork could be made" in message
    for nothing in (None, "the call did not return within 10 s"):
        measured, passed, message = tiling.verdict(nothing)
        assert not measured and passed and "scored as passed" in message


def _slow_only_when_long(Q: Any, K: Any, V: Any, causal: bool = False, block_q: int = 16,
                         block_k: int = 16) -> Any:
    if Q.shape[-2] >= tiling.LENGTH:
        time.sleep(3)
    return flash_attention_forward(Q, K, V, causal, block_q, block_k)


def test_the_measured_call_has_its_own_time_limit_apart_from_the_probes() -> None:
    _slow_only_when_long.__name__ = "flash_attention_forward"
    spec = get("flash_attention_forward")
    why = measure_tiling(_slow_only_when_long, spec, 0, seconds=0.25)
    assert why == "the call did not return within 0.25 s"
    assert tiling.verdict(why)[:2] == (False, True)


def test_a_function_graded_in_the_notebook_is_measured_too() -> None:
    def flash_attention_backward_plain(*args: Any) -> Any:
        return flash_attention_backward(*args)

    flash_attention_backward_plain.__name__ = "flash_attention_backward"
    report = grade_function(flash_attention_backward_plain, "flash_attention_backward")
    check = _tiling(report)
    assert not check["passed"] and "materialises" in check["message"]
    assert report["misconceptions"] == []


#: CS336 assignment 2's presets (torch, tiles fixed at 16 inside the code): a tiled and an
#: exact untiled fixture of each
CS336 = {"cs336-a2-flash-attention-forward": ("correct_query_outer.py", "correct_untiled.py"),
         "cs336-a2-flash-attention-backward": ("correct_recompute_tiles.py",
                                               "correct_whole_recompute.py")}


def _cs336(preset: str, which: int) -> Path:
    path = SUBMISSIONS / "presets" / preset / CS336[preset][which]
    needs_framework(preset, path)
    return path


@pytest.mark.parametrize("preset", sorted(CS336))
def test_torch_code_is_measured_tiled_passes_untiled_loses_only_the_check(
        preset: str, graded: Any) -> None:
    tiled = graded(_cs336(preset, 0))
    check = _tiling(tiled)
    # (a call slower than the check's own limit on a busy machine is "not decided", passed)
    assert check["passed"] and "not measured" not in check["message"]
    # (the course's code tiles by 16 whatever it is asked: the report says what ran)
    assert "the course's fixed 16 x 16 tiles" in check["message"]
    assert tiling.ASKED not in check["message"]
    untiled = graded(_cs336(preset, 1))
    check = _tiling(untiled)
    assert not check["passed"] and "resident memory grew by" in check["message"]
    assert "the course's fixed 16 x 16 tiles" in check["message"]
    assert untiled["misconceptions"] == []
    assert [c["id"] for c in untiled["checks"] if not c["passed"]] == [tiling.CHECK_ID]


def test_the_check_says_the_tiles_the_measured_call_ran_with() -> None:
    """The measured call asks for 128 x 128 tiles; a course whose code fixes its tile sizes
    runs its own, and code that takes no tile sizes chooses its own: the message says which."""
    import dataclasses

    for name in TILED:
        assert tiling.tiles_run(get(name)) == "128 x 128 tiles" == tiling.ASKED
    for preset in CS336:
        assert tiling.tiles_run(get(preset)) == "the course's fixed 16 x 16 tiles"
        course = get(preset)
        chooses = dataclasses.replace(course, info=dataclasses.replace(
            course.info, interface=dataclasses.replace(course.interface, fixed=())))
        assert tiling.tiles_run(chooses) == "the tiles the code chooses itself"
    fixed = "the course's fixed 16 x 16 tiles"
    assert fixed in tiling.verdict({"traced_peak": 1 << 10}, fixed)[2]
    measured, passed, message = tiling.verdict({"traced_peak": 64 << 20}, fixed)
    assert (measured, passed) == (True, False) and fixed in message and "128" not in message


def _allocates(size: int) -> Any:
    import numpy as np  # (pages written, so resident)

    return lambda: np.ones(size // 8).sum()


def test_a_fork_measures_what_the_call_holds_at_its_peak() -> None:
    """The fork's measurement, without torch: a call that holds 40 MiB at once grows by about
    that much, also in 1 MiB blocks after this process freed 64 MiB of such blocks inside its
    heap (the fork's allocator maps them apart instead of reusing that memory unseen); one
    that holds 40 MiB in 1 MiB pieces freed as it goes stays under the bound. (Blocks under
    128 KiB may still reuse the free space of pages this process keeps half used: a call is
    measured for its large arrays, not its small objects.)"""
    import ctypes

    import numpy as np

    big = peak.measure_forked(_allocates(40 << 20), ["torch"])
    assert big["resident_growth"] is not None, big["why_not"]
    assert 38 << 20 <= big["resident_growth"] <= 48 << 20
    assert tiling.verdict(big)[:2] == (True, False)

    def blocks() -> None:
        held = [np.ones(1 << 17) for _ in range(40)]
        assert held

    libc = ctypes.CDLL(None)
    # (M_MMAP_THRESHOLD: 1 MiB blocks from the heap, as glibc does once a large block was
    # freed; the fork inherits it, and must not reuse the heap's free memory unseen)
    libc.mallopt(-3, 64 << 20)
    try:
        kept = [np.ones(1 << 17) for _ in range(64)]
        pinned = np.ones(1 << 17)  # (above them in the heap: freeing them cannot shrink it)
        del kept
        held = peak.measure_forked(blocks, ["torch"])
    finally:
        libc.mallopt(-3, 128 << 10)  # (glibc's default)
    assert held["resident_growth"] is not None and held["resident_growth"] >= 38 << 20
    assert pinned.any()

    def pieces() -> None:
        for _ in range(40):
            _allocates(1 << 20)()

    small = peak.measure_forked(pieces, ["torch"])
    assert small["resident_growth"] is not None and small["resident_growth"] < 4 << 20
    assert tiling.verdict(small)[:2] == (True, True)


def test_a_fork_that_raises_hangs_or_imports_is_not_measured() -> None:
    def raises() -> None:
        raise ValueError("no")

    with pytest.raises(peak.CallFailed, match="raised ValueError"):
        peak.measure_forked(raises, ["torch"])
    with pytest.raises(peak.CallFailed, match="did not return within 0.25 s") as failed:
        peak.measure_forked(lambda: time.sleep(30), ["torch"], seconds=0.25)
    assert failed.value.kind == "timeout"

    def imports() -> None:
        import xml.dom.minidom  # noqa: F401 - (a module this process has not loaded)

    imported = peak.measure_forked(imports, ["torch"])
    assert imported["resident_growth"] is None and "imported modules" in imported["why_not"]
    measured, passed, message = tiling.verdict(imported)
    assert not measured and passed and "imported modules" in message


def test_a_forks_limit_is_cpu_time_so_a_loaded_machine_decides_nothing() -> None:
    """A call that takes longer on the wall clock without computing (as on a loaded machine,
    where it waits for a core) is still measured; one that computes past the limit is not."""
    def waits_then_allocates() -> None:
        time.sleep(0.8)
        held = bytearray(40 << 20)
        held[::4096] = b"x" * len(held[::4096])

    measured = peak.measure_forked(waits_then_allocates, ["torch"], seconds=0.5)
    assert measured["resident_growth"] is not None
    assert measured["resident_growth"] > tiling.BOUND_BYTES

    def computes() -> None:
        while True:
            pass

    with pytest.raises(peak.CallFailed, match="did not return within 0.5 s") as failed:
        peak.measure_forked(computes, ["torch"], seconds=0.5)
    assert failed.value.kind == "timeout"


def test_the_frameworks_are_found_from_the_code_in_the_child_and_the_notebook() -> None:
    import types

    fake_torch = types.ModuleType("torch")
    namespace: dict[str, Any] = {"torch": fake_torch}
    exec("class Flash:\n    @staticmethod\n    def forward(ctx, Q):\n        return torch\n\n"
         "def factory():\n    return Flash\n", namespace)
    assert peak.frameworks_of(namespace["factory"]) == ["torch"]
    assert peak.frameworks_of(namespace["Flash"]) == ["torch"]
    assert peak.frameworks_of(_slow_only_when_long) == []


def test_the_measured_call_is_as_the_spec_says() -> None:
    for name in TILED:
        probe = tiling.measured_probe(name, 0)
        arrays = [a for a in probe.args if isinstance(a, np.ndarray)]
        assert all(a.shape[0] == tiling.LENGTH for a in arrays)
        assert probe.args[-3:] == (False, tiling.BLOCK, tiling.BLOCK)
    assert tiling.BOUND_BYTES * 4 == tiling.LENGTH ** 2 * 8


@pytest.mark.e2e  # child processes
@pytest.mark.parametrize("assignment", sorted(TILED))
def test_the_sandbox_measures_inside_the_childs_call(assignment: str, tmp_path: Path) -> None:
    from grader.pipeline import grade

    tiled = grade(SUBMISSIONS / assignment / TILED[assignment], assignment=assignment)
    assert _tiling(tiled)["passed"] and "tile by tile" in _tiling(tiled)["message"]
    untiled = grade(SUBMISSIONS / assignment / UNTILED[assignment], assignment=assignment)
    assert not _tiling(untiled)["passed"]
    assert "materialises the n x m score matrix" in _tiling(untiled)["message"]
    assert [c["id"] for c in untiled["checks"] if not c["passed"]] == [tiling.CHECK_ID]


@pytest.mark.e2e  # child processes
def test_the_sandbox_measures_torch_code_in_a_fork_of_the_child() -> None:
    from grader.pipeline import grade

    preset = "cs336-a2-flash-attention-forward"
    tiled = grade(_cs336(preset, 0), assignment=preset)
    assert _tiling(tiled)["passed"] and "tile by tile" in _tiling(tiled)["message"]
    untiled = grade(_cs336(preset, 1), assignment=preset)
    assert "resident memory grew by" in _tiling(untiled)["message"]
    assert [c["id"] for c in untiled["checks"] if not c["passed"]] == [tiling.CHECK_ID]


#: the multi-part example: a course hands in CS336 assignment 2's two FlashAttention problems
#: as one file, the forward and the backward graded as two parts of one submission
FLASH_PARTS = ('[[parts]]\nassignment = "flash_attention_forward"\nweight = 10\n'
               '[[parts]]\nassignment = "flash_attention_backward"\nweight = 10\n')


def _flash_course(tmp_path: Path) -> str:
    folder = tmp_path / "flash"
    folder.mkdir()
    (folder / "assignment.toml").write_text(f'id = "flash"\nkind = "course"\n{FLASH_PARTS}')
    return str(folder)


def _both(tmp_path: Path, forward: str, backward: str) -> Path:
    path = tmp_path / "flash_attention.py"
    path.write_text("\n\n".join((SUBMISSIONS / name).read_text() for name in (forward, backward)))
    return path


def test_flash_forward_and_backward_are_two_parts_of_one_notebook(tmp_path: Path) -> None:
    from grader.core.report import validate
    from grader.notebook import grade_parts

    namespace: dict[str, Any] = {}
    for source in ("flash_attention_forward/correct_loops.py",
                   "flash_attention_backward/backward_missing_d_query_outer.py"):
        exec(compile((SUBMISSIONS / source).read_text(), str(SUBMISSIONS / source), "exec"),
             namespace)
    report = grade_parts(namespace, _flash_course(tmp_path))
    validate(report)
    forward, backward = report["parts"]
    assert forward["score"] == forward["max_score"] == 10.0
    assert _tiling(forward)["passed"] and _tiling(backward)["passed"]
    assert [m["id"] for m in backward["misconceptions"]] == ["backward-missing-d"]
    assert [m["part"] for m in report["misconceptions"]] == ["flash_attention_backward"]


@pytest.mark.e2e  # child processes
def test_flash_forward_and_backward_are_graded_as_two_parts_in_one_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One run of the file (one sandbox session) grades both parts, each with its own tiling
    measurement: here a tiled forward and a backward that materialises the scores."""
    from grader import grade, sandbox
    from grader.core.report import validate

    runs = []
    real = sandbox.run
    monkeypatch.setattr(sandbox, "run", lambda *a, **k: runs.append(1) or real(*a, **k))
    path = _both(tmp_path, "flash_attention_forward/causal_mask_tile_local_loops.py",
                 "flash_attention_backward/correct_untiled_softmax.py")
    report = grade(path, assignment=_flash_course(tmp_path))
    validate(report)
    assert len(runs) == 1
    forward, backward = report["parts"]
    assert [m["id"] for m in forward["misconceptions"]] == ["causal-mask-tile-local"]
    assert _tiling(forward)["passed"]
    assert backward["misconceptions"] == [] and not _tiling(backward)["passed"]
    assert backward["score"] == pytest.approx(backward["max_score"] - 1.0)
    assert report["max_score"] == 20.0
