"""RoPE in two steps (``[interface.rope_tables]``: a builder's tables passed on to the applier)
and RoPE whose theta the course's code fixes (``theta``, ``rope_on``). The presets' fixtures in
each course's style are graded by ``test_presets.py``; here: what the schema refuses, which
probes such interfaces leave out, the child's axes, and mistakes no ID names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import registry
from grader.core import assignments
from grader.sandbox import rope_tables

from .conftest import SUBMISSIONS, needs_framework

Graded = Callable[..., dict[str, Any]]

ROPE_COURSE = """\
id = "two-step-course"
task = "{task}"
function = "apply_rotary_emb"
signature = "apply_rotary_emb(xq, xk, freqs_cis)"

[interface]
parameters = {parameters}
{extra}

[interface.rope_tables]
builder = "precompute_freqs_cis"
arguments = ["d_model", "table_length", "theta"]
{tables}
"""


def _course(tmp_path: Path, parameters: str = '["x", "x", "rope_table"]', tables: str = "",
            extra: str = "", task: str = "rope") -> Path:
    folder = tmp_path / "course"
    folder.mkdir(exist_ok=True)
    (folder / "assignment.toml").write_text(ROPE_COURSE.format(
        task=task, parameters=parameters, tables=tables, extra=extra))
    return folder


@pytest.mark.parametrize("tables,extra,parameters,task,refused", [
    ('buidler = "x"', "", '["x", "x", "rope_table"]', "rope",
     "unknown key 'buidler' in [interface.rope_tables] (did you mean 'builder'?)"),
    ('rows = "some"', "", '["x", "x", "rope_table"]', "rope",
     "rope_tables.rows = 'some'; expected one of positions, all, given"),
    ('layout = "polar"', "", '["x", "x", "rope_table"]', "rope",
     "rope_tables.layout = 'polar'; expected one of complex, stacked, cos-sin"),
    ('read = "queries"', "", '["x", "rope_table"]', "rope", "list x twice in parameters"),
    ('keywords = { dim = "head_dim" }', "", '["x", "x", "rope_table"]', "rope",
     "rope_tables.keywords.dim: parameter 'head_dim' is not one of"),
    ("", "", '["x", "x", "rope_cos"]', "rope", "parameter 'rope_cos' is not one of"),
    ("", 'theta = "10000"', '["x", "x", "rope_table"]', "rope",
     "theta in [interface] must be a number"),
    ("", "theta = 0.0", '["x", "x", "rope_table"]', "rope", "theta = 0.0 must be above 0"),
    ("", "", '["Q", "K", "V"]', "attention", "rope_tables is for the rope task"),
])
def test_the_schema_refuses_what_it_cannot_honour_by_name(
        tmp_path: Path, tables: str, extra: str, parameters: str, task: str,
        refused: str) -> None:
    folder = _course(tmp_path, parameters, tables, extra, task)
    with pytest.raises(ValueError, match="assignment.toml") as caught:
        registry.get(str(folder))
    assert refused in str(caught.value)


def test_a_theta_fixed_where_the_task_takes_none_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "attention-course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(
        'id = "a"\ntask = "attention"\nfunction = "f"\nsignature = "f(Q, K, V)"\n'
        "[interface]\ntheta = 10000.0\n")
    with pytest.raises(ValueError, match="the attention task takes none"):
        registry.get(str(folder))


def test_a_builder_needs_a_name(tmp_path: Path) -> None:
    folder = _course(tmp_path)
    text = (folder / "assignment.toml").read_text()
    (folder / "assignment.toml").write_text(text.replace('builder = "precompute_freqs_cis"\n', ""))
    with pytest.raises(ValueError, match="needs builder"):
        registry.get(str(folder))


def test_the_presets_read_back_as_the_child_reads_them() -> None:
    hf = registry.get("hf-llama-rope").interface.as_dict()["rope_tables"]
    assert hf["constructor"]["config"]["rope_theta"] == "theta"
    assert hf["arguments"] == ["x", "positions_batch"] and hf["layout"] == "cos-sin"
    xcs = registry.get("xcs224n-causal-self-attention").interface
    assert xcs.theta == 10000.0 and xcs.receives("rope_on") and not xcs.receives("theta")


def _left_out(reference: str) -> dict[str, str]:
    return assignments.get(reference).left_out()


def test_every_probe_reaches_an_applier_that_cuts_the_table_itself() -> None:
    """`rows = "all"`: positions that start late or jump are said by the rows' order."""
    assert _left_out("llama-rope") == {}
    assert _left_out("hf-llama-rope") == {}
    assert _left_out("xcs224n-rope") == {
        "theta": "the course's code fixes theta at 10000",
        "theta-and-positions": "the course's code fixes theta at 10000"}


def test_a_fixed_theta_keeps_its_own_probe_and_those_without_rope() -> None:
    left = _left_out("xcs224n-causal-self-attention")
    assert set(left) == {"rope-small-theta", "rope-four-heads", "batched-rope"}
    assert set(left.values()) == {"the course's code fixes theta at 10000"}
    kept = {p.id for p in assignments.get("xcs224n-causal-self-attention").probes()}
    assert {"rope", "two-heads", "future-a", "future-b", "single-token"} <= kept


FOUR_AXES = {(5, 8): (1, 1, 5, 8), (3, 5, 8): (1, 3, 5, 8), (2, 3, 5, 8): (2, 3, 5, 8),
             (2, 2, 3, 5, 8): (4, 3, 5, 8)}


ALWAYS_ON = """\
id = "always-on"
task = "causal_self_attention"
function = "attend"
signature = "attend(x, W_q, W_k, W_v, W_o, num_heads)"

[interface]
parameters = ["X", "W_q", "W_k", "W_v", "W_o", "num_heads"]
theta = 10000.0
"""


def test_a_fixed_theta_without_a_switch_is_rope_always_on(tmp_path: Path) -> None:
    folder = tmp_path / "always-on"
    folder.mkdir()
    (folder / "assignment.toml").write_text(ALWAYS_ON)
    left = assignments.get(str(folder)).left_out()
    assert left["two-heads"] == "the interface always applies RoPE"
    assert left["rope-small-theta"] == "the course's code fixes theta at 10000"
    assert "rope" not in left


@pytest.mark.parametrize("axes", ["any", "bhnd", "bnhd"])
@pytest.mark.parametrize("shape", list(FOUR_AXES))
def test_the_applier_gets_its_axes_and_the_answer_comes_back(
        axes: str, shape: tuple[int, ...]) -> None:
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    given, back = rope_tables._with_axes(x, axes)
    if axes == "any":
        assert given is x and back is None
        return
    as_bhnd = given if axes == "bhnd" else given.swapaxes(1, 2)
    assert as_bhnd.shape == FOUR_AXES[shape]
    assert np.array_equal(as_bhnd.reshape(shape), x)  # each token's features where they were
    assert np.array_equal(back(given * 2.0), x * 2.0)
    assert back(given[..., :4]).shape == given[..., :4].shape  # a wrong shape comes as it came


def test_the_rows_an_applier_gets_are_the_tokens_positions_then_the_rest() -> None:
    values = {"positions_range": np.array([3, 7, 8])}
    rope_tables.derive(values)
    assert values["table_length"] == 9 + rope_tables.SPARE_ROWS
    assert values["positions_batch"].tolist() == [[3, 7, 8]]
    assert rope_tables._rows(values, "positions").tolist() == [3, 7, 8]
    assert rope_tables._rows(values, "all").tolist() == [3, 7, 8, *range(9, 12)]
    assert rope_tables._rows(values, "given") is None
    plain = {"positions_range": np.arange(4)}
    rope_tables.derive(plain)
    assert rope_tables._rows(plain, "all").tolist() == list(range(7))  # the whole table


UNNAMED = sorted((SUBMISSIONS / "unnamed").glob("*/*.py"))


@pytest.mark.parametrize("path", UNNAMED, ids=[f"{p.parent.name}/{p.stem}" for p in UNNAMED])
def test_a_mistake_no_id_names_fails_its_check_and_is_not_accused(
        path: Path, graded: Graded) -> None:
    """RoPE built and never applied (XCS224N's `pass` left in forward): no ID of the contract
    says it; the check of RoPE's values fails, every other passes, nothing is named."""
    needs_framework(path.parent.name, path)
    check = path.read_text().splitlines()[0].split(":", 1)[1].strip()
    report = graded(path)
    assert report["misconceptions"] == [] and report["errors"] == []
    failed = [c["id"] for c in report["checks"] if not c["passed"]]
    assert failed == [check]
    assert report["score"] < report["max_score"]


BUILDER_MISSING = """\
import torch


def apply_rotary_emb(xq, xk, freqs_cis):
    return xq, xk
"""

ONE_RETURNED = """\
import torch


def precompute_freqs_cis(dim, end, theta=10000.0):
    f = theta ** (-torch.arange(0, dim, 2).float() / dim)
    a = torch.outer(torch.arange(end).float(), f)
    return torch.polar(torch.ones_like(a), a)


def apply_rotary_emb(xq, xk, freqs_cis):
    z = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    return torch.view_as_real(z * freqs_cis[None, :, None, :]).flatten(3)
"""


@pytest.mark.parametrize("source,said", [
    (BUILDER_MISSING, "the submission defines no `precompute_freqs_cis`"),
    (ONE_RETURNED, "expects the rotated queries and keys, (q, k)"),
])
def test_code_the_interface_cannot_call_is_an_interface_error(
        tmp_path: Path, source: str, said: str, graded: Graded) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "submission.py"
    path.write_text(source)
    report = graded(path, assignment="llama-rope")
    assert [e["kind"] for e in report["errors"]][:1] == ["wrong-signature"]
    assert said in report["errors"][0]["message"]
    assert report["score"] == 0


FROM_SCRATCH_COURSE = """\
id = "from-scratch-rope"
task = "rope"
function = "apply_rope"
signature = "apply_rope(x, cos, sin)"

[interface]
parameters = ["x", "rope_cos", "rope_sin"]
arrays = "torch"
dtype = "float32"
pairs = "halves"

[interface.rope_tables]
builder = "compute_rope_params"
arguments = ["d_model"]
keywords = { theta_base = "theta", context_length = "table_length" }
layout = "cos-sin"
rows = "all"
axes = "bhnd"
"""

FROM_SCRATCH = """\
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(context_length).float(), inv_freq).repeat(1, 2)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    batch, heads, seq_len, head_dim = x.shape
    x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
    cos, sin = cos[:seq_len][None, None], sin[:seq_len][None, None]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin
"""


@pytest.mark.parametrize("change,named", [
    (None, []),
    (("torch.arange(0, head_dim, 2).float() / head_dim",
      "torch.arange(0, head_dim // 2).float() / head_dim"), ["rope-frequency-missing-two"]),
    (("torch.cat((-x2, x1), dim=-1)", "torch.cat((x2, -x1), dim=-1)"),
     ["rope-rotation-reversed"]),
])
def test_a_course_folder_says_llms_from_scratch_rope_in_toml_alone(
        tmp_path: Path, change: tuple[str, str] | None, named: list[str],
        graded: Graded) -> None:
    """LLMs-from-scratch's `compute_rope_params` + `apply_rope` (cos/sin tables of the
    rotate-half layout, cut to the sequence by the applier): no preset, a folder of TOML."""
    pytest.importorskip("torch")
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(FROM_SCRATCH_COURSE)
    source = FROM_SCRATCH
    if change:
        assert change[0] in source
        source = source.replace(*change)
    path = tmp_path / "rope.py"
    path.write_text(source)
    report = graded(path, assignment=str(folder))
    assert report["errors"] == []
    assert [m["id"] for m in report["misconceptions"]] == named
    assert (report["score"] == report["max_score"]) == (not named)
    assert "not_probed" not in report["metadata"] or report["metadata"]["not_probed"] == []


OLD_HF_COURSE = """\
id = "old-hf-rope"
task = "rope"
function = "apply_rotary_pos_emb"
signature = "apply_rotary_pos_emb(q, k, cos, sin, position_ids)"

[interface]
parameters = ["x", "x", "rope_cos", "rope_sin", "positions_batch"]
arrays = "torch"
dtype = "float32"
pairs = "halves"

[interface.rope_tables]
builder = "LlamaRotaryEmbedding"
constructor = { dim = "d_model", max_position_embeddings = "table_length", base = "theta" }
arguments = ["x"]
keywords = { seq_len = "table_length" }
layout = "cos-sin"
rows = "given"
axes = "bhnd"
read = "keys"
"""

OLD_HF = """\
import torch
from torch import nn


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings=2048, base=10000, device=None):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        t = torch.arange(max_position_embeddings).float()
        emb = torch.outer(t, inv_freq).repeat(1, 2)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x, seq_len=None):
        return self.cos_cached[:seq_len].to(x.dtype), self.sin_cached[:seq_len].to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos = cos[position_ids].unsqueeze(1)  # (B, 1, seq_len, dim)
    sin = sin[position_ids].unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
"""


#: the cache cut to the sequence where it should be indexed by position_ids
POSITIONS_IGNORED = (
    ("cos = cos[position_ids].unsqueeze(1)", "cos = cos[: q.shape[-2]][None, None]"),
    ("sin = sin[position_ids].unsqueeze(1)", "sin = sin[: q.shape[-2]][None, None]"))


@pytest.mark.parametrize("changes,named", [
    ((), []), (POSITIONS_IGNORED, ["rope-positions-ignored"])])
def test_older_hugging_face_code_indexes_its_cache_by_position_ids(
        tmp_path: Path, changes: tuple[tuple[str, str], ...], named: list[str],
        graded: Graded) -> None:
    """transformers before 4.38: the cache cut to seq_len by the rotary embedding, indexed by
    position_ids in apply_rotary_pos_emb; the keys of the (q, k) it returns are read."""
    pytest.importorskip("torch")
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(OLD_HF_COURSE)
    source = OLD_HF
    for old, new in changes:
        assert old in source
        source = source.replace(old, new)
    path = tmp_path / "rope.py"
    path.write_text(source)
    report = graded(path, assignment=str(folder))
    assert report["errors"] == []
    assert [m["id"] for m in report["misconceptions"]] == named
    assert (report["score"] == report["max_score"]) == (not named)
