"""The GPT lecture's heads as the lecture hands them out (issue 33, items 4 and 6): one `Head`
on its own, graded through `one_head`; `MultiHeadAttention` before `proj`, through
`output_projection = false`; per-head modules kept in a ModuleList, a plain list or built in a
loop, whose mistaken line is quoted and fixed in the code's own terms.

The preset fixtures themselves (`presets/gpt-lecture-head/`, `presets/gpt-lecture-multi-head-
attention/`) are graded by `test_presets.py` (their IDs) and `test_feedback.py` (their `# where:`
lines); these tests hold the rest. All run in this process (fast tier).
"""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import registry
from grader.core import locate
from grader.core.assignments import probe_inputs
from grader.notebook import grade_file, reproduce
from grader.sandbox import interface
from reference.tasks.causal_self_attention import causal_self_attention

from .conftest import SUBMISSIONS

PRESETS = SUBMISSIONS / "presets"
LECTURE = PRESETS / "gpt-lecture-multi-head-attention"
HEAD = PRESETS / "gpt-lecture-head"

WITHOUT_PROJ = """\
id = "lecture-heads-side-by-side"
kind = "course"
task = "causal_self_attention"
function = "MultiHeadAttention"
signature = "MultiHeadAttention(num_heads, head_size).forward(x)"
arguments = ["x"]
summary = "The GPT lecture's MultiHeadAttention before proj is added."

[interface]
kind = "class"
parameters = ["X"]
projections = "linear"
arrays = "torch"
batch = "one"
output_projection = false
constructor = { num_heads = "num_heads", head_size = "d_k" }
globals = { n_embd = "d_model", block_size = "seq_len", dropout = 0.0 }
weights = { "heads.{h}.query.weight" = "W_q", "heads.{h}.key.weight" = "W_k", "heads.{h}.value.weight" = "W_v" }
"""

PROJECTED = "        out = self.dropout(self.proj(out))\n"


def _without_proj(tmp_path: Path, source: Path, name: str) -> dict[str, Any]:
    folder = tmp_path / "course"
    folder.mkdir(exist_ok=True)
    (folder / "assignment.toml").write_text(WITHOUT_PROJ)
    text = source.read_text()
    assert PROJECTED in text
    path = tmp_path / f"{name}.py"
    path.write_text(text.replace(PROJECTED, ""))
    return grade_file(path, str(folder))


def test_heads_side_by_side_without_proj_are_graded_with_the_identity(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    report = _without_proj(tmp_path, LECTURE / "correct_head_size_scale.py", "correct")
    assert report["errors"] == [] and report["misconceptions"] == []
    assert report["score"] == report["max_score"]
    report = _without_proj(tmp_path, LECTURE / "lecture_scale_by_channels.py", "channels")
    assert [m["id"] for m in report["misconceptions"]] == ["scale-by-dmodel"]
    assert "C**-0.5" in report["misconceptions"][0]["location"]["code"]


PER_HEAD_CHANNELS = [LECTURE / "lecture_scale_by_channels.py",
                     LECTURE / "plain_list_scale_by_channels.py",
                     LECTURE / "loop_append_scale_by_channels.py",
                     HEAD / "first_version_scale_by_channels.py"]


@pytest.mark.parametrize("path", PER_HEAD_CHANNELS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_scale_by_channels_in_per_head_modules_is_quoted_and_fixed_in_its_own_terms(
        path: Path) -> None:
    """The `C**-0.5` line is quoted (the head's scores, (1, T, T), are its head's slice of the
    stage), and the fix rewrites that line with the head's own width."""
    pytest.importorskip("torch")
    report = grade_file(path, path.parent.name)
    [finding] = report["misconceptions"]
    location = finding["location"]
    assert finding["id"] == "scale-by-dmodel"
    assert "C**-0.5" in location["code"] and location["checked"]
    assert "C**-0.5" not in location["fixed"] and ".shape[-1] ** 0.5" in location["fixed"]


LOOPED_COURSE = """\
id = "heads-in-a-loop"
kind = "course"
task = "causal_self_attention"
function = "LoopedHeads"
signature = "LoopedHeads(num_heads, head_size).forward(x)"
arguments = ["x"]
summary = "Per-head projections kept in plain lists, built and run in loops."

[interface]
kind = "class"
parameters = ["X"]
projections = "linear"
arrays = "torch"
batch = "one"
constructor = { num_heads = "num_heads", head_size = "d_k" }
globals = { n_embd = "d_model", block_size = "seq_len" }
weights = { "queries.{h}.weight" = "W_q", "keys.{h}.weight" = "W_k", "values.{h}.weight" = "W_v", "proj.weight" = "W_o" }
biases = ["proj.bias"]
"""

LOOPED = """\
import torch
import torch.nn as nn


class LoopedHeads(nn.Module):
    def __init__(self, num_heads, head_size):
        super().__init__()
        self.queries, self.keys, self.values = [], [], []
        for _ in range(num_heads):
            self.queries.append(nn.Linear(n_embd, head_size, bias=False))
            self.keys.append(nn.Linear(n_embd, head_size, bias=False))
            self.values.append(nn.Linear(n_embd, head_size, bias=False))
        self.proj = nn.Linear(num_heads * head_size, n_embd)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        outs = []
        for query, key, value in zip(self.queries, self.keys, self.values):
            q, k = query(x), key(x)
            wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
            wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf")).softmax(dim=-1)
            outs.append(wei @ value(x))
        return self.proj(torch.cat(outs, dim=-1))
"""


@pytest.mark.parametrize(("change", "expected"), [
    (None, []),
    (("* k.shape[-1] ** -0.5", "* C ** -0.5"), ["scale-by-dmodel"]),
])
def test_per_head_projections_in_plain_lists_are_set_and_their_line_quoted(
        tmp_path: Path, change: tuple[str, str] | None, expected: list[str]) -> None:
    pytest.importorskip("torch")
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(LOOPED_COURSE)
    path = tmp_path / "looped.py"
    path.write_text(LOOPED.replace(*change) if change else LOOPED)
    report = grade_file(path, str(folder))
    assert report["errors"] == []
    assert [m["id"] for m in report["misconceptions"]] == expected
    assert (report["score"] == report["max_score"]) == (not expected)
    if expected:
        assert "C ** -0.5" in report["misconceptions"][0]["location"]["code"]


def _lecture_head() -> type:
    spec = importlib.util.spec_from_file_location("lecture_head", HEAD / "correct_lecture_head.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Head  # type: ignore[no-any-return]


def test_one_head_is_built_per_head_and_its_outputs_put_side_by_side() -> None:
    """What the report's reproducing call gives: the test input's W_o is the identity, and the
    heads of the lecture's `Head` side by side are causal self-attention's output."""
    pytest.importorskip("torch")
    args = probe_inputs("gpt-lecture-head", "two-heads")
    x, w_q, w_k, w_v, w_o, heads = args
    assert np.array_equal(w_o, np.eye(x.shape[-1]))
    assert not np.array_equal(probe_inputs("causal_self_attention", "two-heads")[4], w_o)
    got = reproduce(_lecture_head(), *args, assignment="gpt-lecture-head")
    expected = causal_self_attention(x, w_q, w_k, w_v, w_o, heads)
    assert np.asarray(got).shape == expected.shape
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-7, atol=1e-9)


REFUSED = [
    ("attention", {"output_projection": False}, "output_projection is for the tasks"),
    ("multi_head_attention_backward", {"kind": "class", "one_head": True},
     "one_head is for the tasks"),
    ("causal_self_attention", {"one_head": True}, 'one_head is for kind = "class"'),
    ("causal_self_attention", {"kind": "class", "one_head": True, "output_projection": True},
     "holds no output projection"),
    ("causal_self_attention", {"kind": "class", "output_projection": False,
                               "weights": {"proj.weight": "W_o"}}, "nothing receives W_o"),
    ("causal_self_attention", {"output_projection": False}, "nothing receives W_o"),
    ("causal_self_attention", {"kind": "class", "one_head": True, "parameters": ["X"],
                               "weights": {"heads.{h}.key.weight": "W_k"}}, "needs no {h}"),
    ("causal_self_attention", {"kind": "class", "one_head": True, "parameters": ["X"],
                               "returns": "output-weights"}, "returns its output alone"),
]


@pytest.mark.parametrize(("task", "table", "said"), REFUSED, ids=[r[2] for r in REFUSED])
def test_an_interface_without_an_output_projection_is_refused_where_it_cannot_hold(
        task: str, table: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        registry._interface(task, table, "here")


def test_the_presets_interface_says_one_head_and_no_output_projection() -> None:
    info = registry.get("gpt-lecture-head")
    assert info.interface.one_head and info.interface.identity_output_projection
    assert registry.get("gpt-lecture-multi-head-attention").interface.output_projection


def test_a_weight_path_reaches_into_plain_lists_tuples_and_dicts() -> None:
    leaf = types.SimpleNamespace(weight="w")
    root = types.SimpleNamespace(heads=[leaf], pairs=(leaf,), named={"q": leaf})
    assert interface._attribute(root, "heads.0.weight") == "w"
    assert interface._attribute(root, "pairs.0.weight") == "w"
    assert interface._attribute(root, "named.q.weight") == "w"
    with pytest.raises(interface.InterfaceError, match="heads.1.weight"):
        interface._attribute(root, "heads.1.weight")


def test_modules_kept_in_a_plain_list_are_found_to_be_cast_and_put_in_eval_mode() -> None:
    """(That they are then cast: `correct_plain_list_of_heads` mixes them with registered
    float64 modules, and gets full marks.)"""
    torch = pytest.importorskip("torch")

    class Heads(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.heads = [torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)]
            self.named = {"deeper": [torch.nn.Linear(2, 2)]}
            self.proj = torch.nn.Linear(2, 2)

    module = Heads()
    held = interface._held_modules(module)
    assert held[0] is module and len(held) == 5
    assert {id(m) for m in held} == {id(module), id(module.proj), *map(id, module.heads),
                                     id(module.named["deeper"][0])}


def test_one_heads_scores_under_a_batch_axis_of_one_are_its_slice_of_the_stage() -> None:
    stage = np.arange(2 * 3 * 3, dtype=np.float64).reshape(2, 3, 3)
    assert locate.same(stage[1][None], stage)
    assert locate.same(stage[0][None], stage)
    assert not locate.same(stage[1].T[None], stage)
    assert not locate.same((stage[0] + stage[1])[None], stage)
