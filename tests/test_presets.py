"""Courses' own interfaces: the presets that ship, a course's own folder, and every place that
grades accepting them. Fixtures under ``tests/submissions/presets/<preset>/`` are written as each
course's students write; the first line says what they must be named (``# expect: ...``), a
``# error: KIND`` line that the interface refuses them with that error. Their reports come from
the session's ``graded`` (see conftest.py); the tests that grade other code start the sandbox or
the command line (``e2e``)."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader import grade, registry
from grader.core.report import validate

from .conftest import (
    SUBMISSIONS,
    declared_error,
    declared_failures,
    expected_ids,
    needs_framework,
    run_cli,
)

Graded = Callable[..., dict[str, Any]]
e2e = pytest.mark.e2e  # starts child processes: the slow tier

PRESETS = SUBMISSIONS / "presets"
FIXTURES = sorted(PRESETS.glob("*/*.py"))
def test_every_preset_has_fixtures_in_its_course_style() -> None:
    presets = [i.id for i in registry.shipped().values()
               if i.kind == "preset" and not i.multi_part]  # (parts: tests/test_parts.py)
    assert len(presets) >= 6
    for preset in presets:
        fixtures = list((PRESETS / preset).glob("*.py"))
        correct = [f for f in fixtures if not expected_ids(f) and not declared_error(f)]
        assert len(correct) >= 3, preset
        assert len(fixtures) - len(correct) >= 2, preset


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_preset_fixture_is_graded_as_its_course_expects(path: Path, graded: Graded) -> None:
    preset = path.parent.name
    report = graded(path)  # (schema-checked)
    assert report["assignment"] == preset
    error = declared_error(path)
    if error:
        assert [e["kind"] for e in report["errors"]][:1] == [error]
        assert report["score"] == 0
        return
    assert sorted(m["id"] for m in report["misconceptions"]) == expected_ids(path)
    assert not [e for e in report["errors"] if e["kind"] in ("crashed", "wrong-signature")]
    if not expected_ids(path):
        # (an exact computation that never tiles loses the tiling check and nothing else)
        failed = {c["id"]: c["max_points"] for c in report["checks"] if not c["passed"]}
        assert sorted(failed) == declared_failures(path) and report["errors"] == []
        assert report["score"] == pytest.approx(report["max_score"] - sum(failed.values()))
    else:
        assert report["score"] < report["max_score"]


def test_mask_inverted_is_told_in_the_courses_convention(graded: Graded) -> None:
    report = graded(PRESETS / "pytorch-mha-convention" / "mask_inverted.py")
    [finding] = report["misconceptions"]
    assert finding["id"] == "mask-inverted"
    assert "True means 'this key is blocked'" in finding["explanation"]
    assert finding["title"] == "Your mask lets through the keys marked True"
    # the evidence too speaks the course's convention, and reproduces through its interface
    assert "exactly the ones marked False" in finding["evidence"]
    assert "reproduce(multi_head_attention, " in finding["evidence"]
    assert "assignment='pytorch-mha-convention'" in finding["evidence"]


def test_probes_the_interface_cannot_express_are_named_as_not_probed(graded: Graded) -> None:
    report = graded(PRESETS / "d2l-dot-product-attention" / "correct_d2l.py")
    assert report["score"] == report["max_score"] < 10
    not_probed = report["metadata"]["not_probed"]
    assert {n["check"] for n in not_probed} == {"masked-keys-zero-weight",
                                                 "masked-keys-no-influence"}
    assert all("valid lengths" in n["why"] for n in not_probed)
    # masks that valid lengths can say stand in for the others: masking is still graded
    assert "values-masked" in [c["id"] for c in report["checks"]]


SELF_ONLY_COURSE = """\
id = "self-only-course"
task = "multi_head_attention"
function = "self_attention"
signature = "self_attention(x, W_q, W_k, W_v, W_o, num_heads)"
arguments = ["x", "W_q", "W_k", "W_v", "W_o", "num_heads"]
summary = "Multi-head self-attention without a mask."

[interface]
parameters = ["X_q", "W_q", "W_k", "W_v", "W_o", "num_heads"]
mask = "none"
self_attention_only = true
"""

SELF_ATTENTION = """\
import numpy as np


def self_attention(x, W_q, W_k, W_v, W_o, num_heads):
    *batch, n, d_model = x.shape
    d_k = d_model // num_heads
    q = (x @ W_q).reshape(*batch, n, num_heads, d_k).swapaxes(-2, -3)
    k = (x @ W_k).reshape(*batch, n, num_heads, d_k).swapaxes(-2, -3)
    v = (x @ W_v).reshape(*batch, n, num_heads, d_k).swapaxes(-2, -3)
    s = q @ k.swapaxes(-1, -2) / np.sqrt(d_k)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return (a @ v).swapaxes(-2, -3).reshape(*batch, n, d_model) @ W_o
"""


def _grade_in_course(tmp_path: Path, course: str, source: str,
                     changes: list[tuple[str, str]]) -> dict[str, Any]:
    """Grade ``source``, edited by ``changes`` (each must apply), against the course folder
    described by ``course`` (its assignment.toml); the report is schema-checked."""
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "assignment.toml").write_text(course)
    for old, new in changes:
        assert old in source
        source = source.replace(old, new)
    (tmp_path / "work.py").write_text(source)
    report = grade(tmp_path / "work.py", assignment=str(tmp_path / "course"))
    validate(report)
    return report


@pytest.mark.parametrize("changes,expected", [
    ([], []),
    ([("np.sqrt(d_k)", "np.sqrt(d_model)")], ["scale-by-dmodel"]),
    ([("s.max(-1,", "s.max(-2,"), ("a.sum(-1,", "a.sum(-2,")], ["softmax-over-queries"]),
    ([(") @ W_o", ")")], ["missing-output-projection"]),
])
@e2e
def test_a_course_restricted_to_unmasked_self_attention_is_diagnosed(
        tmp_path: Path, changes: list[tuple[str, str]], expected: list[str]) -> None:
    """Only self-attention without a mask can be expressed: enough such test inputs are kept
    (scored or for diagnosis only) that each mistake is still named, and nothing when right."""
    report = _grade_in_course(tmp_path, SELF_ONLY_COURSE, SELF_ATTENTION, changes)
    assert sorted(m["id"] for m in report["misconceptions"]) == expected
    assert (report["score"] == report["max_score"]) == (not expected)


@e2e
def test_the_notebook_check_grades_a_preset_as_the_sandbox_does() -> None:
    from grader.notebook import grade_function

    for preset, name, target in (("annotated-transformer-attention", "scale_by_dk", "attention"),
                                 ("cs231n-multi-head-attention", "correct_einsum",
                                  "MultiHeadAttention")):
        path = PRESETS / preset / f"{name}.py"
        needs_framework(preset, path)
        spec = importlib.util.spec_from_file_location(f"fixture_{name}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        here = grade_function(getattr(module, target), preset)
        there = grade(path, assignment=preset)
        assert here["score"] == there["score"]
        assert [m["id"] for m in here["misconceptions"]] == [
            m["id"] for m in there["misconceptions"]]


# --- a course's own interface, in NumPy: runs wherever the grader does ------------------------

COURSE_TOML = """\
id = "our-course-attention"
kind = "course"
course = "A course whose masks block where True, whose function takes the keys first, returns
(weights, output) and works on exactly one batch axis, in float32"
task = "attention"
function = "attend"
signature = "attend(keys, queries, values, blocked=None)"
arguments = ["keys", "queries", "values", "blocked"]
summary = "Attention in our course's conventions."
conventions = ["keys first", "True blocks", "(weights, output)", "(B, n, d) only", "float32"]

[interface]
parameters = ["K", "Q", "V", "mask"]
mask = "block"
returns = "weights-output"
batch = "one"
dtype = "float32"
"""
COURSE_CORRECT = """\
import numpy as np


def attend(keys, queries, values, blocked=None):
    assert keys.ndim == 3 and keys.dtype == np.float32
    scores = queries @ keys.transpose(0, 2, 1) / np.sqrt(keys.shape[-1])
    if blocked is not None:
        scores = np.where(blocked, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights, weights @ values
"""


@pytest.fixture
def course(tmp_path: Path) -> Path:
    folder = tmp_path / "our-course"
    folder.mkdir()
    toml = COURSE_TOML.replace('course = "A course', 'course = """A course').replace(
        'in float32"', 'in float32"""')
    (folder / "assignment.toml").write_text(toml)
    return folder


def _grade_cli(path: Path, *args: str) -> dict[str, Any]:
    done = run_cli("grade", str(path), *args)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    validate(report)
    return dict(report)


@e2e
def test_a_course_folder_outside_the_package_grades_its_own_conventions(
        course: Path, tmp_path: Path) -> None:
    correct = tmp_path / "correct.py"
    correct.write_text(COURSE_CORRECT)
    report = _grade_cli(correct, "--assignment", str(course))
    assert report["assignment"] == "our-course-attention"
    assert report["score"] == report["max_score"] == 10 and report["misconceptions"] == []
    inverted = tmp_path / "inverted.py"
    inverted.write_text(COURSE_CORRECT.replace("np.where(blocked, -np.inf, scores)",
                                               "np.where(blocked, scores, -np.inf)"))
    report = _grade_cli(inverted, "--assignment", str(course))
    assert [m["id"] for m in report["misconceptions"]] == ["mask-inverted"]
    swapped = tmp_path / "swapped.py"  # returns (output, weights): the course asked the reverse
    swapped.write_text(COURSE_CORRECT.replace("return weights, weights @ values",
                                              "return weights @ values, weights"))
    assert _grade_cli(swapped, "--assignment", str(course))["score"] < 10


@e2e
def test_new_assignment_writes_a_folder_every_integration_accepts(tmp_path: Path) -> None:
    folder = tmp_path / "my-attention"
    done = run_cli("new-assignment", "--from", "attention", "--out", str(folder))
    assert done.returncode == 0, done.stderr
    info = registry.get(str(folder))
    assert info.id == "my-attention" and info.kind == "course" and info.task == "attention"
    submission = SUBMISSIONS / "attention" / "scale_by_dk.py"
    report = _grade_cli(submission, "--assignment", str(folder))
    assert report["assignment"] == "my-attention"
    assert [m["id"] for m in report["misconceptions"]] == ["scale-by-dk", "mask-inverted"] or \
        "scale-by-dk" in [m["id"] for m in report["misconceptions"]]
    zip_path = tmp_path / "autograder.zip"
    assert run_cli("gradescope-zip", str(folder), "-o", str(zip_path)).returncode == 0
    import zipfile

    names = zipfile.ZipFile(zip_path).namelist()
    # (beside the grader, not among the shipped assignments: its ID could be a built-in's)
    assert "course-assignment/assignment.toml" in names
    assert not [n for n in names if "assignments/my-attention" in n]
    config = json.loads(zipfile.ZipFile(zip_path).read("autograder.json"))
    assert config["assignment"] == "my-attention"
    assert config["assignment_folder"] == "course-assignment"
    assert run_cli("new-assignment", "--from", "attention", "--out", str(folder)).returncode == 2


@pytest.mark.parametrize("preset", registry.ids())
@e2e
def test_new_assignment_from_every_preset_keeps_its_interface_not_its_course(
        tmp_path: Path, preset: str) -> None:
    """Only the top-level id and kind change (a class preset's `[interface] kind = "class"`
    once became "course", and the half-written folder stayed behind); a built-in's
    `[canonical]` table, the task's own call, stays with the built-in; the preset's comments
    and its `course` line, which describe the preset's course, are not copied for the staff
    to rewrite."""
    import tomllib

    folder = tmp_path / "course"
    done = run_cli("new-assignment", "--from", preset, "--out", str(folder))
    assert done.returncode == 0, done.stderr
    original_text = (registry.get(preset).folder / registry.INTERFACE_FILE).read_text()
    written_text = (folder / registry.INTERFACE_FILE).read_text()
    original, written = tomllib.loads(original_text), tomllib.loads(written_text)
    assert written["id"] == "course" and written["kind"] == "course"
    mine = ("id", "kind", "canonical", "course")
    assert "canonical" not in written and "course" not in written
    assert ({k: v for k, v in written.items() if k not in mine}
            == {k: v for k, v in original.items() if k not in mine})
    comments = [line for line in written_text.splitlines() if line.lstrip().startswith("#")]
    assert len(comments) == 2 and all("new-assignment" in c or "README" in c for c in comments)
    assert registry.get(str(folder)).task == registry.get(preset).task


@e2e
def test_a_failed_new_assignment_leaves_nothing_behind(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file")
    done = run_cli("new-assignment", "--from", "cs231n-multi-head-attention",
                   "--out", str(blocker / "course"))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"]


@e2e
def test_assignments_lists_the_built_ins_and_the_presets() -> None:
    done = run_cli("assignments")
    assert done.returncode == 0
    for preset in ("cs231n-multi-head-attention", "d2l-dot-product-attention",
                   "annotated-transformer-attention", "coursera-dls-attention",
                   "pytorch-mha-convention", "cs336-attention", "attention"):
        assert preset in done.stdout


@e2e
def test_an_unknown_assignment_is_a_usage_error_naming_the_known_ones() -> None:
    done = run_cli("grade", str(SUBMISSIONS / "attention" / "correct_matmul.py"),
                   "--assignment", "atention")
    assert done.returncode == 2
    assert "unknown assignment 'atention'; did you mean 'attention'?" in done.stderr


@e2e
def test_a_missing_package_is_named_with_how_to_install_it(tmp_path: Path) -> None:
    path = tmp_path / "needs.py"
    path.write_text("import attention_grader_absent_package as helper\n"
                    + (SUBMISSIONS / "attention" / "correct_matmul.py").read_text())
    report = _grade_cli(path, "--assignment", "attention")
    first = report["errors"][0]
    assert first["kind"] == "missing-dependency"
    assert "pip install attention_grader_absent_package" in first["message"]


@e2e
def test_a_preset_starter_kit_is_in_the_courses_interface(tmp_path: Path) -> None:
    from grader.starter import kit_files

    files = kit_files("cs231n-multi-head-attention")
    stub = files["cs231n-multi-head-attention.py"]
    assert "class MultiHeadAttention(nn.Module):" in stub and "import torch" in stub
    assert "--assignment cs231n-multi-head-attention" in stub
    notebook = files["cs231n-multi-head-attention.ipynb"]
    assert "assignment='cs231n-multi-head-attention'" in notebook
    function_kit = kit_files("cs336-attention")["cs336-attention.py"]
    assert "def scaled_dot_product_attention(Q, K, V, mask=None):" in function_kit
    path = tmp_path / "stub.py"
    path.write_text(function_kit)
    if importlib.util.find_spec("torch") is not None:
        report = _grade_cli(path, "--assignment", "cs336-attention")
        assert "not implemented yet" in report["errors"][0]["message"]


@e2e
def test_course_interface_code_is_checked_in_the_action_and_pytest_plugin(
        course: Path, tmp_path: Path) -> None:
    correct = tmp_path / "correct.py"
    correct.write_text(COURSE_CORRECT)
    ini = tmp_path / "pytest.ini"
    ini.write_text(textwrap.dedent(f"""\
        [pytest]
        attention_submission = {correct}
        attention_assignment = {course}
        """))
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-c", str(ini), str(tmp_path)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@e2e
def test_batch_grades_framework_code_as_grade_does(tmp_path: Path) -> None:
    """Batch runs submissions in forks of a pre-warmed server: PyTorch reads the source of the
    frames it is imported from, the server's own among them, which must not be refused."""
    from grader.batch import Entry, run_batch

    preset = "d2l-dot-product-attention"
    paths = [PRESETS / preset / name for name in ("correct_d2l.py", "scale_by_dk.py")]
    for path in paths:
        needs_framework(preset, path)
    result = run_batch([Entry(p.stem, (p,)) for p in paths], preset, tmp_path, jobs=1)
    for row, path in zip(result.rows, paths):
        alone = grade(path, assignment=preset)
        assert row["status"] == "graded", row
        assert (row["score"], row["misconceptions"]) == (
            alone["score"], [m["id"] for m in alone["misconceptions"]])


FUSED_COURSE = """\
id = "fused-heads-course"
task = "multi_head_attention"
function = "FusedSelfAttention"
signature = "FusedSelfAttention(embed_dim, num_heads).forward(x)"
arguments = ["x"]
summary = "Self-attention with one fused nn.Linear for q, k, v, interleaved head by head."

[interface]
kind = "class"
parameters = ["X_q"]
mask = "none"
self_attention_only = true
projections = "linear"
arrays = "torch"
batch = "one"
fused = "per-head"
constructor = { embed_dim = "d_model", num_heads = "num_heads" }
weights = { "qkv.weight" = "W_q|W_k|W_v", "out.weight" = "W_o" }
biases = ["qkv.bias", "out.bias"]
"""

FUSED_MODULE = """\
import math

import torch
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.h, self.d = num_heads, embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        B, n, E = x.shape
        q, k, v = self.qkv(x).view(B, n, self.h, 3 * self.d).transpose(1, 2).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        out = scores.softmax(dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(B, n, E))
"""


@pytest.mark.parametrize("change,expected", [
    (None, []),
    (("math.sqrt(self.d)", "math.sqrt(E)"), ["scale-by-dmodel"]),
])
@e2e
def test_a_fused_projection_interleaved_head_by_head(tmp_path: Path, change, expected) -> None:
    """fused = "per-head": the q|k|v weight is set head by head (q, k, v of head 0, then head
    1, ...), as Megatron-style code splits it; correct code gets full marks, a mistake its name."""
    pytest.importorskip("torch")
    report = _grade_in_course(tmp_path, FUSED_COURSE, FUSED_MODULE, [change] if change else [])
    assert report["errors"] == []
    assert sorted(m["id"] for m in report["misconceptions"]) == expected
    assert (report["score"] == report["max_score"]) == (not expected)


DICT_COURSE = """\
id = "dict-course"
task = "attention"
function = "attend"
signature = "attend(q, k, v, mask=None) -> {'context': ..., 'attn': ...}"
arguments = ["q", "k", "v", "mask"]
summary = "Attention returning a dict."

[interface]
parameters = ["Q", "K", "V", "mask"]
returns = "dict"
return_keys = ["context", "attn"]
"""

DICT_FUNCTION = """\
import numpy as np


def attend(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True)
    return {"context": a @ v, "attn": a}
"""


@pytest.mark.parametrize("change,expected", [
    (None, []),
    (("/ np.sqrt(q.shape[-1])", ""), ["no-scaling"]),
    (('"context": a @ v', '"out": a @ v'), None),
])
@e2e
def test_a_course_whose_code_returns_a_dict(tmp_path: Path, change, expected) -> None:
    report = _grade_in_course(tmp_path, DICT_COURSE, DICT_FUNCTION, [change] if change else [])
    if expected is None:  # the declared key is missing: said, naming the key
        assert report["status"] == "error"
        assert "no key 'context'" in report["errors"][0]["message"]
        return
    assert sorted(m["id"] for m in report["misconceptions"]) == expected
    assert (report["score"] == report["max_score"]) == (not expected)


HEADS_COURSE = """\
id = "heads-layout-course"
task = "attention"
function = "attention"
signature = "attention(q, k, v, mask=None)  # (B, h, n, d) each"
arguments = ["q", "k", "v", "mask"]
summary = "Attention on per-head (B, h, n, d) inputs, as fused kernels take them."

[interface]
batch = "heads"
"""

HEADS_FUNCTION = """\
import numpy as np


def attention(q, k, v, mask=None):
    B, h, n, d = q.shape  # exactly (batch, heads, tokens, features), as the course promises
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhkv->bhqv", a, v), a
"""


@pytest.mark.parametrize("change,expected", [
    (None, []),
    (("/ np.sqrt(d)", "/ d"), ["scale-by-dk"]),
])
@e2e
def test_a_course_whose_code_takes_exactly_batch_and_heads_axes(tmp_path: Path, change,
                                                                 expected) -> None:
    """batch = "heads": every test input reaches the code as (B, h, n, d), whatever its own
    leading axes (2-D ones get two unit axes, more are folded), and the answer goes back."""
    report = _grade_in_course(tmp_path, HEADS_COURSE, HEADS_FUNCTION, [change] if change else [])
    assert report["errors"] == []
    assert sorted(m["id"] for m in report["misconceptions"]) == expected
    assert (report["score"] == report["max_score"] == 10) == (not expected)


JAX_COURSE = """\
id = "jax-course"
task = "attention"
function = "dot_product_attention"
signature = "dot_product_attention(query, key, value, mask=None)"
arguments = ["query", "key", "value", "mask"]
summary = "Attention in JAX, float32, True = may attend."

[interface]
parameters = ["Q", "K", "V", "mask"]
arrays = "jax"
dtype = "float32"
"""

JAX_FUNCTION = """\
import jax
import jax.numpy as jnp


def dot_product_attention(query, key, value, mask=None):
    d = query.shape[-1]
    scores = jnp.einsum("...qd,...kd->...qk", query, key) / jnp.sqrt(d)
    if mask is not None:
        scores = jnp.where(mask, scores, -jnp.inf)
    weights = jax.nn.softmax(scores, axis=-1)
    return weights @ value
"""


@pytest.mark.parametrize("change,expected", [(None, []), (("/ jnp.sqrt(d)", "/ d"), ["scale-by-dk"])])
@e2e
def test_a_jax_course(tmp_path: Path, change, expected) -> None:
    """arrays = "jax": the test inputs reach the code as JAX arrays (float32 here); the line of a
    mistake is quoted from JAX values too."""
    pytest.importorskip("jax")
    report = _grade_in_course(tmp_path, JAX_COURSE, JAX_FUNCTION, [change] if change else [])
    assert report["errors"] == []
    assert [m["id"] for m in report["misconceptions"]] == expected
    assert (report["score"] == report["max_score"]) == (not expected)
    if expected:
        assert report["misconceptions"][0]["location"]["line"] == 7


def test_a_course_that_fixes_its_tiles_gets_later_maximum_probes_sized_for_them(
        graded: Graded) -> None:
    """CS336's code tiles by 16 inside: the later-maximum probes built for tiles of 2 to 6 keys
    would hold every key in one tile there. Probes sized for 16-key tiles run in their place
    (several key tiles, each row's maximum in its last one), only there, so that a rescaling
    mistake loses the later-maximum check as it does in the plain assignment."""
    import numpy as np

    from grader.core.assignments import get

    plain = [p.id for p in get("flash_attention_forward").probes(0)]
    course = {p.id: p for p in get("cs336-a2-flash-attention-forward").probes(0)}
    assert not [i for i in plain if i.endswith("-16")]
    later = [p for p in course.values() if "later-max" in p.tags]
    assert sorted(p.id for p in later) == ["later-maximum-16", "later-maximum-causal-16",
                                           "later-maximum-remainder-16"]
    for probe in later:
        q, k = probe.args[0], probe.args[1]
        causal, block = probe.args[3], probe.args[5]
        scores = q @ k.T
        if causal:
            scores = np.where(np.arange(k.shape[0])[None, :] > np.arange(q.shape[0])[:, None],
                              -np.inf, scores)
        last_tile = (np.arange(q.shape[0]) if causal else k.shape[0] - 1) // block
        assert k.shape[0] > 2 * block
        assert (scores.argmax(axis=-1) // block == last_tile).all()
    path = SUBMISSIONS / "presets" / "cs336-a2-flash-attention-forward" / "rescale_inverted.py"
    needs_framework("cs336-a2-flash-attention-forward", path)
    [check] = [c for c in graded(path)["checks"] if c["id"] == "values-later-maximum"]
    assert check["points"] == 0 and check["message"].startswith("0 / 3 ")


def test_a_course_that_fixes_its_tiles_gets_every_tile_sized_probe_sized_for_them(
        graded: Graded) -> None:
    """Every forward probe whose tiles its own block sizes choose has a stand-in sized for 16 x
    16 tiles where a course's code fixes its tiles (CS336), holding several key tiles where the
    probe holds several of its own; none runs in the plain assignment, whose probes are as
    they were. An inverted rescale in CS336's style then loses every check it loses in the
    plain assignment that CS336 can run, and about as large a share of the points."""
    from grader.core.assignments import get
    from grader.core.probes import TILE_SIZED, stands_in_for

    plain = get("flash_attention_forward").probes(0)
    assert not [p.id for p in plain if stands_in_for(p)]
    course = get("cs336-a2-flash-attention-forward")
    standing = {stands_in_for(p): p for p in course.probes(0) if stands_in_for(p)}
    sized = [p for p in plain if TILE_SIZED in p.tags]
    assert {p.id for p in sized} - set(standing) == {"causal-cached"}  # (no cached keys there)
    assert "causal-cached" in course.left_out(0)
    for probe in sized:
        if probe.id in standing:
            stand_in = standing[probe.id]
            assert stand_in.tags - {f"stands-in:{probe.id}"} == probe.tags - {TILE_SIZED}
            assert stand_in.args[4:6] == (16, 16)
            sizes = [(a.shape[-2], b) for a, b in zip(probe.args[:2], probe.args[4:6])]
            ours = [a.shape[-2] for a in stand_in.args[:2]]
            if -(-sizes[1][0] // sizes[1][1]) > 1:  # (several key tiles: several of 16)
                assert ours[1] > 16
            if not probe.args[3]:  # (a shorter last tile where the probe has one; causal: square)
                assert [n % b > 0 for n, b in sizes] == [n % 16 > 0 for n in ours]
    assert standing["causal-single-tile"].args[1].shape[-2] <= 16  # (a single tile stays one)
    presets = SUBMISSIONS / "presets" / "cs336-a2-flash-attention-forward" / "rescale_inverted.py"
    needs_framework("cs336-a2-flash-attention-forward", presets)
    ours = graded(presets)
    theirs = graded(SUBMISSIONS / "flash_attention_forward" / "online_rescale_inverted_loops.py")
    runs = {c["id"] for c in ours["checks"]}
    failed = {c["id"] for c in ours["checks"] if not c["passed"]}
    assert {c["id"] for c in theirs["checks"] if not c["passed"]} & runs <= failed
    lost_share = 1 - ours["score"] / ours["max_score"]
    assert lost_share >= 0.9 * (1 - theirs["score"] / theirs["max_score"])
