"""Interfaces real courses hand out, said in assignment.toml and nothing else: a method to call
with constants (numpy-ml's layers), keyword arguments and constants (trax), a mask always passed
(picoGPT), softmax on matrices only or over a fixed axis (d2l, the Coursera helper), an axis
given to a constructor; and the file's schema, checked before anything runs. Each option is
tested with correct code (full marks, nothing named) and buggy code (its mistake named)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from grader import grade, registry
from grader.core.report import validate

from .conftest import run_cli

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

HEADER = {
    "softmax": ('task = "softmax"\nfunction = "{function}"\nsignature = "{function}(...)"\n'),
    "attention": ('task = "attention"\nfunction = "{function}"\nsignature = "{function}(...)"\n'),
    "multi_head_attention": ('task = "multi_head_attention"\nfunction = "{function}"\n'
                             'signature = "{function}(...).forward(x, context)"\n'),
    **{task: f'task = "{task}"\nfunction = "{{function}}"\nsignature = "{{function}}(...)"\n'
       for task in ("causal_mask", "positional_encoding", "rope", "causal_self_attention")},
}
#: a torch module called as module(x, context), nn.Linear weights, (B, n, d) inputs, no mask
TORCH_MODULE = """\
    kind = "class"
    parameters = ["X_q", "X_kv"]
    arrays = "torch"
    projections = "linear"
    batch = "one"
    mask = "none"
    """


def _course(tmp_path: Path, task: str, function: str, interface: str) -> Path:
    folder = tmp_path / f"course-{function}-{len(list(tmp_path.glob('course-*')))}"
    folder.mkdir()
    (folder / "assignment.toml").write_text(
        f'id = "course-{function}"\nkind = "course"\n' + HEADER[task].format(function=function)
        + "\n[interface]\n" + textwrap.dedent(interface))
    return folder


def _grade(tmp_path: Path, folder: Path, source: str, name: str) -> dict[str, Any]:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    report = grade(path, assignment=str(folder))
    validate(report)
    return report


def _named(report: dict[str, Any]) -> list[str]:
    return sorted(m["id"] for m in report["misconceptions"])


def _full_marks(report: dict[str, Any]) -> None:
    assert (report["score"], _named(report), report["errors"]) == (report["max_score"], [], [])


NUMPY_ML_SOFTMAX = """\
    import numpy as np

    class Softmax:
        def __init__(self, dim=-1):
            self.dim = dim

        def forward(self, X, retain_derived=True):
            shifted = X - np.max(X, axis=self.dim, keepdims=True){bug}
            e = np.exp(shifted)
            return e / e.sum(axis=self.dim, keepdims=True)
    """


def test_a_class_called_through_its_method_with_constants(tmp_path: Path) -> None:
    """numpy-ml: no __call__, `forward(X, retain_derived=True)`, the axis in the constructor."""
    folder = _course(tmp_path, "softmax", "Softmax", """\
        kind = "class"
        method = "forward"
        parameters = ["x"]
        constructor = { dim = "axis" }
        constants = { retain_derived = false }
        """)
    correct = _grade(tmp_path, folder, NUMPY_ML_SOFTMAX.format(bug=""), "correct")
    _full_marks(correct)
    assert "the interface takes no axis" not in str(correct["metadata"].get("not_probed"))
    unstable = NUMPY_ML_SOFTMAX.format(bug="").replace(
        "shifted = X - np.max(X, axis=self.dim, keepdims=True)", "shifted = X")
    assert _named(_grade(tmp_path, folder, unstable, "unstable")) == ["unstable-softmax"]
    # said without the method: an interface problem named as such, not the student's crash
    plain = _course(tmp_path, "softmax", "Softmax", """\
        kind = "class"
        parameters = ["x"]
        constructor = { dim = "axis" }
        """)
    report = _grade(tmp_path, plain, NUMPY_ML_SOFTMAX.format(bug=""), "uncallable")
    assert [e["kind"] for e in report["errors"]] == ["wrong-signature"]
    assert "method" in report["errors"][0]["message"]


TRAX = """\
    import numpy as np

    def _per_head_attention(q, k, v, mask, dropout, mode, rng):
        assert dropout == 0.0 and mode == "eval" and rng is None
        d = q.shape[-1]
        dots = q @ np.swapaxes(k, -1, -2) / {scale}
        if mask is not None:
            dots = np.where(mask, dots, -1e9)
        dots = np.exp(dots - dots.max(axis=-1, keepdims=True))
        dots = dots / dots.sum(axis=-1, keepdims=True)
        return dots @ v
    """


def test_constants_and_none_given_by_keyword(tmp_path: Path) -> None:
    folder = _course(tmp_path, "attention", "_per_head_attention", """\
        parameters = ["Q", "K", "V", "mask"]
        constants = { dropout = 0.0, mode = "eval" }
        none = ["rng"]
        """)
    _full_marks(_grade(tmp_path, folder, TRAX.format(scale="np.sqrt(d)"), "correct"))
    assert _named(_grade(tmp_path, folder, TRAX.format(scale="d"), "dk")) == ["scale-by-dk"]


AFTER_OPTIONALS = """\
    import numpy as np

    def attend(q, k, v, dropout=0.0, training=False, mask=None):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores = np.where({condition}, scores, -np.inf)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        return w @ v
    """


def test_a_mask_after_optional_arguments_is_given_by_name(tmp_path: Path) -> None:
    folder = _course(tmp_path, "attention", "attend", """\
        parameters = ["Q", "K", "V"]
        keywords = { mask = "mask" }
        """)
    correct = _grade(tmp_path, folder, AFTER_OPTIONALS.format(condition="mask"), "correct")
    _full_marks(correct)
    assert "the interface takes no mask" not in str(correct["metadata"].get("not_probed"))
    inverted = _grade(tmp_path, folder, AFTER_OPTIONALS.format(condition="~mask"), "inverted")
    assert _named(inverted) == ["mask-inverted"]


PICO_GPT = """\
    import numpy as np

    def softmax(x):
        exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return exp_x / np.sum(exp_x, axis=-1, keepdims=True)

    def attention(q, k, v, mask):
        return softmax(q @ np.swapaxes(k, -1, -2) / {scale} + mask) @ v
    """


def test_a_mask_is_always_passed_to_code_that_always_adds_it(tmp_path: Path) -> None:
    """picoGPT adds its mask unconditionally: unmasked test inputs get a mask keeping every
    key (zeros, in its additive convention), never None."""
    folder = _course(tmp_path, "attention", "attention", """\
        parameters = ["Q", "K", "V", "mask"]
        mask = "additive"
        mask_always = true
        """)
    correct = _grade(tmp_path, folder, PICO_GPT.format(scale="np.sqrt(q.shape[-1])"), "pico")
    _full_marks(correct)
    buggy = _grade(tmp_path, folder, PICO_GPT.format(scale="q.shape[-1]"), "pico_dk")
    assert _named(buggy) == ["scale-by-dk"] and buggy["errors"] == []


D2L_SOFTMAX = """\
    import numpy as np

    def softmax(X):
        X_exp = np.exp(X{shift})
        partition = X_exp.sum(1, keepdims=True)
        return X_exp / partition
    """


def test_softmax_on_matrices_only(tmp_path: Path) -> None:
    """d2l's from-scratch softmax takes rows of a matrix: no `no-batch-support` for that."""
    folder = _course(tmp_path, "softmax", "softmax", """\
        parameters = ["x"]
        ndim = 2
        """)
    shift = " - X.max(1, keepdims=True)"
    _full_marks(_grade(tmp_path, folder, D2L_SOFTMAX.format(shift=shift), "stable"))
    assert _named(_grade(tmp_path, folder, D2L_SOFTMAX.format(shift=""), "d2l")) == [
        "unstable-softmax"]
    # summed down the columns: the rows are every other axis of a probe, folded into one
    columns = D2L_SOFTMAX.format(shift=" - X.max(0, keepdims=True)").replace("sum(1,", "sum(0,")
    report = _grade(tmp_path, folder, columns, "columns")
    assert _named(report) == ["softmax-wrong-axis"]
    assert "axis=1" in report["misconceptions"][0]["fix"]


COURSERA_SOFTMAX = """\
    import numpy as np

    def softmax(x):
        e = np.exp(x - np.max(x, axis={axis}, keepdims=True))
        return e / np.sum(e, axis={axis}, keepdims=True)
    """


def test_softmax_over_a_fixed_first_axis(tmp_path: Path) -> None:
    """A course helper that normalises axis 0 (columns) is not accused of the wrong axis, and
    is graded on every test input (each moved to the axis it normalises)."""
    folder = _course(tmp_path, "softmax", "softmax", """\
        parameters = ["x"]
        axis = 0
        """)
    correct = _grade(tmp_path, folder, COURSERA_SOFTMAX.format(axis=0), "columns")
    _full_marks(correct)
    assert not correct["metadata"].get("not_probed")
    unstable = COURSERA_SOFTMAX.format(axis=0).replace("x - np.max(x, axis=0, keepdims=True)",
                                                       "x")
    assert _named(_grade(tmp_path, folder, unstable, "unstable")) == ["unstable-softmax"]


@pytest.mark.parametrize("interface,message", [
    ('retrun_keys = ["out"]', "unknown key 'retrun_keys' in [interface] (did you mean "
                              "'return_keys'?)"),
    ('mask = "kep"', "mask = 'kep'; expected one of keep, block"),
    ("mask_always = 1", "mask_always in [interface] must be true or false"),
    ('constants = ["dropout"]', "constants in [interface] must be a table"),
    ('keywords = { mask = "the_mask" }', "parameter 'the_mask' is not one of"),
    ("axis = 1", "axis 0 or -1"),
    ('batch = "one"\naxis = 0', "for softmax, ndim = 2 says"),
])
def test_a_wrong_key_or_value_is_a_clear_error_before_anything_runs(
        tmp_path: Path, interface: str, message: str) -> None:
    folder = _course(tmp_path, "softmax" if "axis" in interface else "attention", "f",
                     interface + "\n")
    with pytest.raises(ValueError, match=None) as raised:
        registry.get(str(folder))
    assert message in str(raised.value)
    source = tmp_path / "f.py"
    source.write_text("def f(*args):\n    raise SystemExit('ran')\n")
    done = run_cli("check", str(source), "--assignment", str(folder))
    assert done.returncode == 2 and message in " ".join(done.stderr.split())
    assert "ran" not in done.stdout


def test_a_typo_at_the_top_of_the_file_is_named(tmp_path: Path) -> None:
    folder = _course(tmp_path, "attention", "f", "")
    text = (folder / "assignment.toml").read_text().replace("function =", "fucntion =")
    (folder / "assignment.toml").write_text(text)
    with pytest.raises(ValueError, match="unknown key 'fucntion' in the file"):
        registry.get(str(folder))


GPT_LECTURE = """\
    import torch
    import torch.nn as nn
    from torch.nn import functional as F

    class Head(nn.Module):
        def __init__(self, head_size):
            super().__init__()
            self.key = nn.Linear(n_embd, head_size, bias=False)
            self.query = nn.Linear(n_embd, head_size, bias=False)
            self.value = nn.Linear(n_embd, head_size, bias=False)
            # the lecture keeps its mask in a buffer sized by block_size; here it keeps every key
            self.register_buffer("keep", torch.ones(block_size, block_size))

        def forward(self, x, context):
            B, T, C = x.shape
            S = context.shape[1]
            k, q, v = self.key(context), self.query(x), self.value(context)
            wei = q @ k.transpose(-2, -1) * {scale}
            wei = wei.masked_fill(self.keep[:T, :S] == 0, float("-inf"))
            wei = F.softmax(wei, dim=-1)
            return wei @ v

    class MultiHeadAttention(nn.Module):
        def __init__(self, num_heads, head_size):
            super().__init__()
            self.heads = nn.ModuleList([Head(head_size) for _ in range(num_heads)])
            self.proj = nn.Linear(n_embd, n_embd)

        def forward(self, x, context):
            out = torch.cat([h(x, context) for h in self.heads], dim=-1)
            return self.proj(out)
    """


def test_one_module_per_head_globals_and_a_buffer_sized_by_the_input(tmp_path: Path) -> None:
    """The GPT lecture's layout: a ModuleList of heads (each mapped onto its d_k columns of
    W_q, W_k, W_v), `n_embd` read from the module, a buffer sized by `block_size`."""
    pytest.importorskip("torch")
    folder = _course(tmp_path, "multi_head_attention", "MultiHeadAttention", TORCH_MODULE + """\
    constructor = { num_heads = "num_heads", head_size = "d_k" }
    globals = { n_embd = "d_model", block_size = "seq_len" }
    weights = { "heads.{h}.query.weight" = "W_q", "heads.{h}.key.weight" = "W_k", "heads.{h}.value.weight" = "W_v", "proj.weight" = "W_o" }
    biases = ["proj.bias"]
    """)
    correct = _grade(tmp_path, folder, GPT_LECTURE.format(scale="k.shape[-1] ** -0.5"), "gpt")
    assert correct["score"] == correct["max_score"] and _named(correct) == [], correct["errors"]
    assert not any(e["kind"] == "wrong-signature" for e in correct["errors"])
    by_model = _grade(tmp_path, folder, GPT_LECTURE.format(scale="C ** -0.5"), "gpt_dmodel")
    assert _named(by_model) == ["scale-by-dmodel"]


TWO_PATHS = """\
    import torch
    import torch.nn as nn

    class Attention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.h, self.d = heads, dim // heads
            self.qkv = nn.Linear(dim, 3 * dim, bias=False)   # self-attention: q | k | v
            self.q = nn.Linear(dim, dim, bias=False)         # cross-attention: q, and
            self.kv = nn.Linear(dim, 2 * dim, bias=False)    # k, v interleaved head by head
            self.out = nn.Linear(dim, dim, bias=False)

        def split(self, x):
            B, N, _ = x.shape
            return x.view(B, N, self.h, self.d).transpose(1, 2)

        def forward(self, x, context):
            B, N, C = x.shape
            if context is x:
                q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, dim=-1))
            else:
                q = self.split(self.q(x))
                kv = self.kv(context).view(B, context.shape[1], self.h, 2, self.d)
                k, v = (kv[..., i, :].transpose(1, 2) for i in (0, 1))
            w = (q @ k.transpose(-2, -1) / {scale}).softmax(dim=-1)
            return self.out((w @ v).transpose(1, 2).reshape(B, N, C))
    """


def test_each_fused_weight_has_its_own_layout(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    folder = _course(tmp_path, "multi_head_attention", "Attention", TORCH_MODULE + """\
    constructor = { dim = "d_model", heads = "num_heads" }
    weights = { "qkv.weight" = "W_q|W_k|W_v", "q.weight" = "W_q", "kv.weight" = "W_k|W_v", "out.weight" = "W_o" }
    fused = { "kv.weight" = "per-head" }
    """)
    correct = _grade(tmp_path, folder, TWO_PATHS.format(scale="self.d ** 0.5"), "correct")
    _full_marks(correct)
    buggy = _grade(tmp_path, folder, TWO_PATHS.format(scale="self.d"), "dk")
    assert _named(buggy) == ["scale-by-dk"]


# --- the rest of the attention unit --------------------------------------------------------------

def test_an_answer_with_a_leading_axis_of_one_is_squeezed(tmp_path: Path) -> None:
    """`squeeze = 1`: a look-ahead mask returned as (1, n, n), in NumPy (the TensorFlow preset
    says the same for DLS); without it the same code is a wrong shape."""
    squeezed = _course(tmp_path, "causal_mask", "look_ahead", 'parameters = ["n"]\nsqueeze = 1\n')
    plain = _course(tmp_path, "causal_mask", "look_ahead", 'parameters = ["n"]\n')
    source = """\
        import numpy as np

        def look_ahead(n):
            return np.tril(np.ones((1, n, n), dtype=np.float32){bug})
        """
    right = _grade(tmp_path, squeezed, source.format(bug=""), "right")
    _full_marks(right)
    assert "kv-cache-aligned" in {c["check"] for c in right["metadata"]["not_probed"]}
    assert _named(_grade(tmp_path, squeezed, source.format(bug=", k=1"), "next")) == [
        "causal-mask-sees-next"]
    assert _grade(tmp_path, plain, source.format(bug=""), "unsqueezed")["score"] < 10


def test_a_config_object_and_a_module_that_adds_to_its_input(tmp_path: Path) -> None:
    """A constructor table is an object with those attributes (nanoGPT's `config`); `zeros` is
    the input of a positional encoding module that adds itself to what it is given."""
    folder = _course(tmp_path, "positional_encoding", "Encoding", """\
        kind = "class"
        parameters = ["zeros"]
        constructor = { config = { width = "d_model", scale = 1.0 } }
        squeeze = 1
        """)
    source = """\
        import numpy as np

        class Encoding:
            def __init__(self, config):
                d = config.width
                pair = np.arange(d) // 2
                angle = np.arange(500)[:, None] / 10000 ** (2 * pair / d){bug}
                self.pe = config.scale * np.where(np.arange(d) % 2 == 0, np.sin(angle), np.cos(angle))

            def __call__(self, x):
                return x + self.pe[None, : x.shape[1]]
        """
    _full_marks(_grade(tmp_path, folder, source.format(bug=""), "right"))
    report = _grade(tmp_path, folder, source.format(bug=" * 0 + np.arange(1, 501)[:, None] / "
                                                   "10000 ** (2 * pair / d)"), "from_one")
    assert _named(report) == ["pe-positions-from-one"]


def test_a_rope_module_always_given_positions_and_theta_only_where_taken(tmp_path: Path) -> None:
    """`positions_range` hands 0..n-1 to code that always takes positions; causal
    self-attention without `theta` among its parameters is not sent the RoPE inputs."""
    folder = _course(tmp_path, "causal_self_attention", "attend",
                     'parameters = ["X", "W_q", "W_k", "W_v", "W_o", "num_heads"]\n')
    source = (Path(__file__).parent / "submissions" / "causal_self_attention" /
              "correct_numpy.py").read_text().replace("def causal_self_attention", "def attend")
    report = _grade(tmp_path, folder, source, "no_rope_course")
    _full_marks(report)
    assert "values-rope" in {c["check"] for c in report["metadata"]["not_probed"]}
    with pytest.raises(ValueError, match="squeeze"):
        registry._interface("causal_mask", {"squeeze": 5}, "here")
    with pytest.raises(ValueError, match="not one of"):
        registry._interface("positional_encoding",
                            {"constructor": {"config": {"width": "d_modell"}}}, "here")


def test_a_course_of_half_split_rope_pairs_is_graded_by_them(tmp_path: Path) -> None:
    """`pairs = "halves"`: Hugging Face's `rotate_half` layout is right there, in RoPE and inside
    causal self-attention; the neighbours layout is then the mistake, told in the course's
    terms."""
    folder = _course(tmp_path, "rope", "rope", 'pairs = "halves"\n')
    halves = (Path(__file__).parent / "submissions" / "rope" / "halves_slices.py").read_text()
    neighbours = (Path(__file__).parent / "submissions" / "rope" / "correct_slices.py").read_text()
    _full_marks(_grade(tmp_path, folder, halves, "halves"))
    report = _grade(tmp_path, folder, neighbours, "neighbours")
    assert _named(report) == ["rope-halves-not-interleaved"]
    assert report["misconceptions"][0]["title"].startswith("Your RoPE rotates neighbouring")
    csa = _course(tmp_path, "causal_self_attention", "causal_self_attention", 'pairs = "halves"\n')
    layer = (Path(__file__).parent / "submissions" / "causal_self_attention" /
             "rope_halves_numpy.py").read_text()
    _full_marks(_grade(tmp_path, csa, layer, "csa_halves"))
    with pytest.raises(ValueError, match="pairs is for the causal_self_attention, rope tasks"):
        registry._interface("attention", {"pairs": "halves"}, "here")


def test_whether_a_function_takes_the_arguments_is_answered_for_each_count_and_name() -> None:
    """The child keeps each answer for the next call alike: another count of arguments, other
    names, or another function of the same name is asked anew."""
    from grader.sandbox.returns import check_binding

    def two(a, b):
        return a

    assert check_binding(two, (1, 2)) is None
    assert "3 positional arguments" in check_binding(two, (1, 2, 3))
    assert check_binding(two, (1, 2)) is None
    assert "and c by name" in check_binding(two, (1,), {"c": 3})
    assert check_binding(two, (1,), {"b": 3}) is None

    def two(a, b, c=None):  # noqa: F811 - the student's redefinition
        return a

    assert check_binding(two, (1, 2, 3)) is None


#: CS336's adapter in NumPy: RoPE always on (theta and the token positions are its arguments)
CS336_ROPE_ATTENTION = """\
    import numpy as np


    def rope(x, theta, positions):
        d = x.shape[-1]
        angles = positions[:, None] * theta ** (-np.arange(0, d, 2) / d)
        cos, sin = np.cos(angles), np.sin(angles)
        out = np.empty_like(x)
        out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
        out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
        return out


    def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta,
                                               q_proj_weight, k_proj_weight, v_proj_weight,
                                               o_proj_weight, in_features, token_positions):
        x = np.asarray(in_features, dtype=np.float64)
        *lead, n, _ = x.shape
        d_k = d_model // num_heads

        def heads(w):
            return (x @ np.asarray(w).T).reshape(*lead, n, num_heads, d_k).swapaxes(-2, -3)

        positions = np.asarray(token_positions).reshape(-1, n)[0]
        q = rope(heads(q_proj_weight), theta, positions)
        k = rope(heads(k_proj_weight), theta, positions)
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(d_k)
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        out = (weights @ heads(v_proj_weight)).swapaxes(-2, -3).reshape(*lead, n, d_model)
        return out @ np.asarray(o_proj_weight).T
    """


def test_causality_is_checked_where_rope_is_always_on(tmp_path: Path) -> None:
    """The causality checks (a later token changes no earlier output; one token attends to
    itself) get a theta where the interface always applies RoPE, so they run there too."""
    folder = _course(tmp_path, "causal_self_attention", "run_multihead_self_attention_with_rope",
                     """\
        parameters = ["d_model", "num_heads", "seq_len", "theta", "W_q", "W_k", "W_v", "W_o",
                      "X", "positions_range"]
        projections = "linear"
        """)
    causality = {"future-unseen", "single-token-itself"}
    correct = _grade(tmp_path, folder, CS336_ROPE_ATTENTION, "correct")
    _full_marks(correct)
    assert causality <= {c["id"] for c in correct["checks"]}
    assert not causality & {n["check"] for n in correct["metadata"].get("not_probed", [])}
    unmasked = CS336_ROPE_ATTENTION.replace(
        "scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)", "pass")
    report = _grade(tmp_path, folder, unmasked, "unmasked")
    assert _named(report) == ["causal-mask-missing"]
    assert [c["passed"] for c in report["checks"] if c["id"] == "future-unseen"] == [False]


def test_a_class_reading_an_undeclared_global_is_an_interface_error(tmp_path: Path) -> None:
    """A constructor that reads a module-level name the interface does not set (the GPT
    lecture's `block_size`) cannot be built as the interface says: the staff's error to act on
    (declare it under `globals`), not the student's runtime error; declared, it grades."""
    source = """\
        import numpy as np

        class Softmax:
            def __init__(self):
                self.dim = dim

            def __call__(self, x):
                e = np.exp(x - x.max(axis=self.dim, keepdims=True))
                return e / e.sum(axis=self.dim, keepdims=True)
        """
    folder = _course(tmp_path, "softmax", "Softmax", 'kind = "class"\nparameters = ["x"]\n')
    report = _grade(tmp_path, folder, source, "undeclared")
    assert report["status"] == "error"
    (error,) = [e for e in report["errors"] if e["kind"] == "wrong-signature"]
    assert "'dim'" in error["message"] and "globals" in error["message"]
    declared = _course(tmp_path, "softmax", "Softmax",
                       'kind = "class"\nparameters = ["x"]\nglobals = { dim = -1 }\n')
    _full_marks(_grade(tmp_path, declared, source, "declared"))
