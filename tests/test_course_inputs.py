"""Interfaces of real code that took inputs the grader could not give (issue 33, item 4): RoPE
on (B, h, n, d) or (B, n, h, d) inputs with positions (B, n) (`axes`, `positions_per_batch`), a
mask or an encoding built from a token tensor (`tokens`, `[interface.tokens]`), and string
constructor arguments (`constructor_constants`, `rope_tables.constants`). The presets written
for them (torchtune-rope, jadore-subsequent-mask, bert-pytorch-positional-embedding,
lucidrains-rotary-embedding) are graded on seed 0 by ``test_presets.py``; here on two more
seeds, then what the schema refuses, and course folders that say the same in TOML alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import registry
from grader.sandbox import interface, rope_tables

from .conftest import SUBMISSIONS, declared_error, expected_ids

Graded = Callable[..., dict[str, Any]]

PRESETS = SUBMISSIONS / "presets"
NEW_PRESETS = ("torchtune-rope", "jadore-subsequent-mask", "bert-pytorch-positional-embedding",
               "lucidrains-rotary-embedding")
FIXTURES = sorted(p for preset in NEW_PRESETS for p in (PRESETS / preset).glob("*.py"))


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_new_presets_hold_on_more_seeds(path: Path, seed: int, graded: Graded) -> None:
    """Correct code in each course's style: full marks, nothing named; buggy code: its ID and
    nothing else, whatever the seed."""
    assert declared_error(path) is None
    report = graded(path, seed=seed)
    assert sorted(m["id"] for m in report["misconceptions"]) == expected_ids(path)
    assert report["errors"] == []
    assert (report["score"] == report["max_score"]) == (not expected_ids(path))


def test_each_new_preset_has_correct_and_buggy_code() -> None:
    for preset in NEW_PRESETS:
        fixtures = list((PRESETS / preset).glob("*.py"))
        assert sum(not expected_ids(f) for f in fixtures) >= 3, preset
        assert sum(bool(expected_ids(f)) for f in fixtures) >= 2, preset


# --- what the child gives: the shapes -----------------------------------------------------------

ROPE_TASK = registry.canonical_call("rope").as_dict()


@pytest.mark.parametrize("axes,shape,batch", [
    ("bnhd", (2, 3, 5, 8), (2, 5)), ("bhnd", (2, 3, 5, 8), (2, 5)), ("bnhd", (5, 8), (1, 5)),
    ("bhnd", (2, 2, 3, 5, 8), (4, 5)), ("any", (2, 3, 5, 8), (2, 3, 5)), ("any", (5, 8), (5,)),
])
def test_positions_come_once_per_batch_index_of_the_input_as_the_code_takes_it(
        axes: str, shape: tuple[int, ...], batch: tuple[int, ...]) -> None:
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    positions = np.array([3, 4, 6, 7, 9])
    spec = {"axes": axes, "parameters": ["x", "positions_per_batch"]}
    args, leading, values, _ = interface.course_arguments(spec, ROPE_TASK, (x, positions))
    assert args[1].shape == batch and (args[1] == positions).all()
    assert args[1].dtype == np.int64
    back = interface.restore(args[0] * 2.0, leading)
    assert np.array_equal(back, x * 2.0)  # each token's features back where they were


def test_a_tables_builder_gets_positions_per_batch_after_the_axes() -> None:
    """The two-step path shapes the input once, before the builder runs."""
    x = np.zeros((2, 3, 5, 8))
    spec = {"parameters": ["x", "x", "rope_table"], "rope_tables": {
        "builder": "b", "axes": "bnhd", "layout": "complex"}}
    _, _, values, _ = interface.course_arguments(spec, ROPE_TASK, (x, np.arange(5)))
    assert values["x"].shape == (2, 5, 3, 8) and values["positions_per_batch"].shape == (2, 5)
    assert rope_tables.axes_of(spec) == "bnhd"


@pytest.mark.parametrize("task,args,table,shape,dtype", [
    ("causal_mask", (6, None), {}, (2, 6), np.int64),
    ("causal_mask", (4, None), {"batch": 3, "dtype": "int32"}, (3, 4), np.int32),
    ("positional_encoding", (7, 10), {"features": True, "dtype": "float32"}, (2, 7, 10),
     np.float32),
])
def test_a_token_tensor_stands_for_the_length(task: str, args: tuple[Any, ...],
                                              table: dict[str, Any], shape: tuple[int, ...],
                                              dtype: Any) -> None:
    call = registry.canonical_call(task).as_dict()
    spec = {"parameters": ["tokens"], "tokens": table}
    [tokens], _, _, _ = interface.course_arguments(spec, call, args)
    assert tokens.shape == shape and tokens.dtype == dtype
    assert (tokens != 0).all()  # (0 is a padding id in many courses: never given)
    assert len(np.unique(tokens)) > 1


# --- what the schema refuses, by name -----------------------------------------------------------

def _folder(tmp_path: Path, text: str) -> str:
    folder = tmp_path / "course"
    folder.mkdir(exist_ok=True)
    (folder / "assignment.toml").write_text(text)
    return str(folder)


HEAD = 'id = "c"\ntask = "{task}"\nfunction = "f"\nsignature = "f(x)"\n[interface]\n'


@pytest.mark.parametrize("task,body,refused", [
    ("attention", 'axes = "bhnd"', "axes is for the rope task"),
    ("rope", 'axes = "bshd"', "axes = 'bshd'; expected one of any, bhnd, bnhd"),
    ("rope", 'parameters = ["x", "x", "rope_table"]\naxes = "bhnd"\n[interface.rope_tables]\n'
     'builder = "b"\naxes = "bnhd"\nread = "queries"', "axes = 'bhnd' and rope_tables.axes = "
     "'bnhd' disagree"),
    ("rope", 'parameters = ["tokens"]', "parameter 'tokens' is not one of"),
    ("causal_mask", 'parameters = ["n"]\n[interface.tokens]\nbatch = 2',
     "give `tokens` to a parameter"),
    ("causal_mask", 'parameters = ["tokens"]\n[interface.tokens]\ndtype = "int8"',
     "tokens.dtype = 'int8'; expected one of int64, int32, float32, float64"),
    ("causal_mask", 'parameters = ["tokens"]\n[interface.tokens]\nbatch = 0',
     "tokens.batch = 0"),
    ("causal_mask", 'parameters = ["tokens"]\n[interface.tokens]\nfeatures = true',
     "the causal_mask task has no d_model"),
    ("causal_mask", 'parameters = ["tokens"]\n[interface.tokens]\nshape = "bn"',
     "unknown key 'shape' in [interface.tokens]"),
    ("rope", 'constructor_constants = { device = "cpu" }',
     "constructor_constants is for kind = \"class\""),
    ("rope", 'kind = "class"\nconstructor = { device = "cpu" }',
     "a fixed string goes in constructor_constants"),
    ("rope", 'kind = "class"\nconstructor_constants = { device = "cuda" }',
     "constructor_constants.device = 'cuda': the grader runs the code on the CPU"),
    ("rope", 'constants = { device = "cuda:0" }', "constants.device = 'cuda:0'"),
    ("rope", "constants = { device = 0 }", "constants.device = 0: the grader runs the code on "
     "the CPU"),
    ("rope", 'parameters = ["x", "rope_table"]\n[interface.rope_tables]\nbuilder = "b"\n'
     'keywords = { device = "x" }\nconstants = { device = "cpu" }',
     "rope_tables.constants.device is also given to the builder"),
    ("rope", 'kind = "class"\nconstructor_constants = { dtype = "float16" }',
     "dtype = 'float16': the interface's test inputs are float64; give 'float64'"),
    ("rope", 'kind = "class"\nconstructor_constants = { dtype = "float32" }',
     "(or dtype = 'float32' under [interface]"),
    ("rope", 'kind = "class"\nconstructor = { d_k = "d_model" }\n'
     'constructor_constants = { d_k = 8 }', "constructor_constants.d_k is also in constructor"),
    ("rope", 'parameters = ["x", "rope_table"]\n[interface.rope_tables]\nbuilder = "b"\n'
     'constants = { device = "mps" }', "rope_tables.constants.device = 'mps'"),
])
def test_the_schema_refuses_what_it_cannot_give_by_name(tmp_path: Path, task: str, body: str,
                                                        refused: str) -> None:
    with pytest.raises(ValueError, match="assignment.toml") as caught:
        registry.get(_folder(tmp_path, HEAD.format(task=task) + body + "\n"))
    assert refused in str(caught.value)


def test_string_constants_that_make_sense_are_kept_as_given(tmp_path: Path) -> None:
    info = registry.get(_folder(tmp_path, HEAD.format(task="rope") + (
        'kind = "class"\ndtype = "float32"\narrays = "torch"\n'
        'constructor_constants = { device = "cpu", dtype = "float32", modality = "lang" }\n')))
    given = info.interface.as_dict()["constructor_constants"]
    assert given == [["device", "cpu"], ["dtype", "float32"], ["modality", "lang"]]
    assert registry.get("lucidrains-rotary-embedding").interface.as_dict()[
        "rope_tables"]["constants"] == {"freqs_for": "lang"}


# --- course folders that say it in TOML alone ---------------------------------------------------

CS336_DEVICE = (PRESETS.parent.parent.parent / "assignments" / "cs336-rope" / "assignment.toml")

DEVICE_CHECKED = '''\
import torch
import torch.nn as nn


class RotaryPositionalEmbedding(nn.Module):
    def __init__(self, theta, d_k, max_seq_len, device=None):
        super().__init__()
        if not isinstance(device, str):
            raise TypeError("this course passes the device by name")
        inv_freq = 1.0 / theta ** (torch.arange(0, d_k, 2, device=torch.device(device)) / d_k)
        angles = torch.outer(torch.arange(max_seq_len, device=device).double(), inv_freq.double())
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x, token_positions):
        cos, sin = self.cos[token_positions], self.sin[token_positions]
        out = torch.empty_like(x)
        out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
        out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
        return out
'''


@pytest.mark.parametrize("fixture", ["correct_buffers", "correct_complex", "positions_not_used",
                                     "inline-device-checked"])
def test_a_course_gives_its_constructor_the_device_by_name(tmp_path: Path, fixture: str,
                                                           graded: Graded) -> None:
    """CS336's `RotaryPositionalEmbedding(theta, d_k, max_seq_len, device)` given device="cpu":
    its fixtures are graded as under the preset, and a string is what reaches the code."""
    pytest.importorskip("torch")
    toml = CS336_DEVICE.read_text().replace(
        'constructor = { theta = "theta", d_k = "d_model", max_seq_len = 128 }',
        'constructor = { theta = "theta", d_k = "d_model", max_seq_len = 128 }\n'
        'constructor_constants = { device = "cpu" }')
    assert "constructor_constants" in toml
    folder = _folder(tmp_path, toml.replace('kind = "preset"', 'kind = "course"'))
    if fixture.startswith("inline"):
        path = tmp_path / "rope.py"
        path.write_text(DEVICE_CHECKED)
        expected: list[str] = []
    else:
        path = PRESETS / "cs336-rope" / f"{fixture}.py"
        expected = expected_ids(path)
    for seed in (0, 1):
        report = graded(path, assignment=folder, seed=seed)
        assert report["errors"] == []
        assert sorted(m["id"] for m in report["misconceptions"]) == expected
        assert (report["score"] == report["max_score"]) == (not expected)


HF_PER_BATCH = (PRESETS.parent.parent.parent / "assignments" / "hf-llama-rope" /
                "assignment.toml")


@pytest.mark.parametrize("fixture", ["correct_modeling_llama", "correct_chunked",
                                     "position_ids_unused"])
def test_hugging_face_tables_are_built_from_position_ids_of_the_whole_batch(
        tmp_path: Path, fixture: str, graded: Graded) -> None:
    """position_ids (B, n), one row per sample, as Llama's model passes them: the builder's
    cos and sin are (B, n, head_dim) and the applier's unsqueeze(1) lines them up with
    (B, heads, n, head_dim)."""
    pytest.importorskip("torch")
    toml = HF_PER_BATCH.read_text()
    assert 'arguments = ["x", "positions_batch"]' in toml
    toml = toml.replace('arguments = ["x", "positions_batch"]',
                        'arguments = ["x", "positions_per_batch"]')
    folder = _folder(tmp_path, toml.replace('kind = "preset"', 'kind = "course"'))
    path = PRESETS / "hf-llama-rope" / f"{fixture}.py"
    for seed in (0, 1):
        report = graded(path, assignment=folder, seed=seed)
        assert report["errors"] == []
        assert sorted(m["id"] for m in report["misconceptions"]) == expected_ids(path)
        assert (report["score"] == report["max_score"]) == (not expected_ids(path))


ONE_STEP_BHND = '''\
id = "one-step-bhnd"
task = "rope"
function = "apply_rope"
signature = "apply_rope(x, position_ids, theta=10000.0)"

[interface]
parameters = ["x", "positions_per_batch", "theta"]
arrays = "torch"
axes = "bhnd"
'''

PER_SAMPLE = '''\
import torch


def apply_rope(x, position_ids, theta=10000.0):
    """x (batch, heads, seq_len, head_dim), position_ids (batch, seq_len): sample by sample."""
    batch, heads, seq_len, head_dim = x.shape
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=x.dtype) / head_dim)
    out = torch.empty_like(x)
    for b in range(batch):
        angles = position_ids[b].to(x.dtype)[:, None] * inv_freq[None, :]
        cos, sin = angles.cos(), angles.sin()
        even, odd = x[b, ..., 0::2], x[b, ..., 1::2]
        out[b, ..., 0::2] = even * cos - odd * sin
        out[b, ..., 1::2] = even * sin + odd * cos
    return out
'''


@pytest.mark.parametrize("change,named", [
    (None, []), (("position_ids[b].to(x.dtype)", "torch.arange(seq_len).to(x.dtype)"),
                 ["rope-positions-ignored"]),
    (("angles.cos(), angles.sin()", "angles.cos(), -angles.sin()"),
     ["rope-rotation-reversed"])])
def test_one_step_rope_takes_heads_first_and_a_row_of_positions_per_sample(
        tmp_path: Path, change: tuple[str, str] | None, named: list[str],
        graded: Graded) -> None:
    """Code that reads position_ids[b] for each sample b needs as many rows as samples."""
    pytest.importorskip("torch")
    folder = _folder(tmp_path, ONE_STEP_BHND)
    source = PER_SAMPLE if change is None else PER_SAMPLE.replace(*change)
    assert change is None or change[0] in PER_SAMPLE
    path = tmp_path / "rope.py"
    path.write_text(source)
    for seed in (0, 1):
        report = graded(path, assignment=folder, seed=seed)
        assert report["errors"] == []
        assert [m["id"] for m in report["misconceptions"]] == named
        assert (report["score"] == report["max_score"]) == (not named)


FROM_EMBEDDINGS = '''\
id = "encoding-from-embeddings"
task = "positional_encoding"
function = "PositionalEncoding"
signature = "PositionalEncoding(d_model, max_len=5000).forward(x)"

[interface]
kind = "class"
parameters = ["tokens"]
constructor = { d_model = "d_model" }
arrays = "torch"
dtype = "float32"
squeeze = 1

[interface.tokens]
# the token embeddings (batch, seq_len, d_model): only their shape is read
features = true
dtype = "float32"
'''

SHAPE_READER = '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        """x: (batch, seq_len, d_model) embeddings; the encoding for their positions."""
        return self.pe[:, : x.size(1)]
'''


SWAPPED = (("pe[0, :, 0::2] = torch.sin", "pe[0, :, 0::2] = torch.cos"),
           ("pe[0, :, 1::2] = torch.cos", "pe[0, :, 1::2] = torch.sin"))


@pytest.mark.parametrize("changes,named", [
    ((), []),
    ((("torch.arange(max_len)", "torch.arange(1, max_len + 1)"),), ["pe-positions-from-one"]),
    (SWAPPED, ["pe-sin-cos-swapped"])])
def test_an_encoding_read_from_the_shape_of_embeddings(
        tmp_path: Path, changes: tuple[tuple[str, str], ...], named: list[str],
        graded: Graded) -> None:
    """forward(x) on (batch, seq_len, d_model) embeddings, returning the encoding alone."""
    pytest.importorskip("torch")
    folder = _folder(tmp_path, FROM_EMBEDDINGS)
    source = SHAPE_READER
    for old, new in changes:
        assert old in source
        source = source.replace(old, new)
    path = tmp_path / "encoding.py"
    path.write_text(source)
    for seed in (0, 1):
        report = graded(path, assignment=folder, seed=seed)
        assert report["errors"] == []
        assert [m["id"] for m in report["misconceptions"]] == named
        assert (report["score"] == report["max_score"]) == (not named)
