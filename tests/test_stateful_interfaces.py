"""Code called in steps, as courses hand it out: a stateful object called forward then backward
(CMU 11-785's mytorch classes, gradients returned or read from attributes), a
torch.autograd.Function called through `.apply` with its gradients read from `.grad` and its
outputs found among its saved tensors (CS336 assignment 2), tile sizes fixed inside the code.
All said in assignment.toml; the schema refuses a wrong key or value by name before any code
runs. The child's side (``grader/sandbox/interface.py``) is tested here directly, in this
process; the presets' fixtures (tests/submissions/presets/) are graded in test_presets.py."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from grader import probe_inputs, registry
from grader.core.assignments import get
from grader.sandbox import interface
from grader.sandbox.returns import check_binding

from .conftest import SUBMISSIONS, declared_failures, expected_ids, grade_trusted, run_cli

PRESETS = SUBMISSIONS / "presets"


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the schema ------------------------------------------------------------------------------

@pytest.mark.parametrize("task,data,message", [
    ("attention_backward", {"kind": "class", "backward": {"methd": "backward"}},
     "unknown key 'methd' in [interface.backward] (did you mean 'method'?)"),
    ("attention", {"kind": "class", "backward": {"method": "backward"}},
     "[interface.backward] is for the tasks graded on gradients"),
    ("attention_backward", {"backward": {"method": "backward"}},
     "[interface.backward] is for kind = \"class\""),
    ("attention_backward", {"kind": "class", "backward": {"gradients": "grad"}},
     "backward.gradients = 'grad'; for kind = 'class' one of outputs, inputs"),
    ("attention_backward", {"kind": "autograd", "arrays": "torch",
                            "backward": {"gradients": "outputs"}},
     "backward.gradients = 'outputs'; for kind = 'autograd' one of grad"),
    ("attention_backward", {"kind": "autograd", "arrays": "torch",
                            "backward": {"method": "backward"}},
     "backward.method is a class's"),
    ("attention_backward", {"kind": "class", "backward": {"parameters": ["d_out"]}},
     "parameter 'd_out' is not one of"),
    ("attention_backward", {"kind": "autograd", "arrays": "torch",
                            "parameters": ["Q", "K", "V", "mask"],
                            "backward": {"parameters": ["grad_output", "Q"]}},
     "takes one upstream gradient"),
    ("attention_backward", {"kind": "class", "backward": {},
                            "gradients_from": {"dW_q": "q_proj.dLdW"}},
     "gradients_from.dW_q: dW_q is not one of the attention_backward task's outputs"),
    ("attention_backward", {"kind": "class", "gradients_from": {"dQ": "dQ"}},
     "gradients_from reads attributes of a class's object after its backward"),
    ("attention_backward", {"kind": "class", "parameters": ["Q", "K", "mask"],
                            "backward": {"gradients": "inputs"}},
     "the output dV is neither the gradient of an argument the forward receives"),
    ("flash_attention_forward", {"kind": "class", "saved_outputs": {"L": "per-query"}},
     "saved_outputs.L = 'per-query': saved tensors are an autograd Function's"),
    ("flash_attention_forward", {"kind": "autograd", "arrays": "torch",
                                 "saved_outputs": {"L": "by-shape"}},
     "saved_outputs.L = 'by-shape'"),
    ("flash_attention_forward", {"fixed": {"Q": 1}}, "fixed.Q: only arguments with a default"),
    ("flash_attention_forward", {"fixed": {"block_q": 16}}, "the interface also gives block_q"),
    ("flash_attention_forward", {"parameters": ["Q", "K", "V"], "fixed": {"block_q": "16"}},
     "fixed.block_q = '16' must be a number"),
    ("attention", {"causal_square_only": True}, "causal_square_only is for tasks with a causal"),
    ("flash_attention_forward", {"equal_widths": ["Q", "causal"]},
     "equal_widths names two or more of the flash_attention_forward task's sequences"),
    ("attention_backward", {"kind": "autograd", "arrays": "torch", "constructor": {"a": 1}},
     "constructor is not for kind = \"autograd\""),
    ("attention_backward", {"kind": "autograd"}, "kind = \"autograd\" needs arrays = \"torch\""),
    ("attention", {"factory": True}, "factory is for kind = \"class\" or \"autograd\""),
    ("attention_backward", {"kind": "class", "backward": {}, "saved_outputs": "L"},
     "saved_outputs in [interface] must be a table"),
])
def test_a_wrong_step_option_is_refused_by_name(task: str, data: dict[str, Any],
                                                message: str) -> None:
    with pytest.raises(ValueError) as raised:
        registry._interface(task, data, "here")
    assert message in str(raised.value)


@pytest.mark.e2e
def test_a_typo_in_the_backward_table_stops_everything_before_code_runs(tmp_path: Path) -> None:
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(textwrap.dedent("""\
        id = "course"
        kind = "course"
        task = "attention_backward"
        function = "Attention"
        signature = "Attention().forward(Q, K, V), then .backward(d_out)"

        [interface]
        kind = "class"
        method = "forward"
        parameters = ["Q", "K", "V", "mask"]

        [interface.backward]
        method = "backward"
        gradient = "outputs"
        """))
    source = tmp_path / "attention.py"
    source.write_text("raise SystemExit('ran')\nclass Attention:\n    pass\n")
    done = run_cli("check", str(source), "--assignment", str(folder))
    message = "unknown key 'gradient' in [interface.backward] (did you mean 'gradients'?)"
    assert done.returncode == 2 and message in " ".join(done.stderr.split())
    assert "ran" not in done.stdout


def test_the_presets_say_their_steps_as_data() -> None:
    cmu = registry.get("cmu-11785-attention-backward").interface
    assert (cmu.kind, cmu.method, cmu.backward_method, cmu.gradients) == (
        "class", "forward", "backward", "outputs")
    assert cmu.mask == "block" and cmu.receives("grad_output")
    cs336 = registry.get("cs336-a2-flash-attention-forward").interface
    assert (cs336.kind, cs336.factory, dict(cs336.saved_outputs)) == (
        "autograd", True, {"L": "per-query"})
    assert dict(cs336.fixed) == {"block_q": 16, "block_k": 16} and cs336.causal_square_only


# --- the child's side: steps on one object ---------------------------------------------------

#: a made-up task of the shape of multi_head_attention_backward: two sequences and a weight
TWO_INPUTS = {"arguments": ["grad_output", "X_q", "X_kv", "W"], "optional": [], "defaults": [],
              "outputs": ["dX_q", "dX_kv", "dW"], "optional_outputs": [],
              "sequences": ["grad_output", "X_q", "X_kv"], "queries": "X_q", "keys": "X_kv",
              "rotary_pairs": "", "returns_mask": False}


class Mixer:
    """y = (q + k + v) @ W, its backward returning the gradient of each input (as CMU's
    MultiHeadAttention.backward returns d_q, d_k, d_v) and keeping dW as an attribute."""

    def __init__(self) -> None:
        self.layer = type("Layer", (), {})()

    def forward(self, query: Any, key: Any, value: Any) -> Any:
        self.inputs = (query, key, value)
        return (query + key + value) @ self.layer.W

    def backward(self, d_output: Any) -> tuple[Any, ...]:
        total = sum(self.inputs)
        self.layer.dW = total.T @ d_output
        d_in = d_output @ self.layer.W.T
        return d_in, 2 * d_in, 3 * d_in


def _spec(**options: Any) -> dict[str, Any]:
    return registry.Interface(**options).as_dict()


def test_gradients_of_one_input_passed_twice_are_summed_and_weights_read_from_attributes(
) -> None:
    rng = np.random.default_rng(0)
    d_y, x_q, x_kv, w = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), \
        rng.normal(size=(3, 4)), rng.normal(size=(4, 4))

    class Built(Mixer):
        def __init__(self) -> None:
            super().__init__()
            self.layer.W = w

    spec = _spec(kind="class", method="forward", parameters=("X_q", "X_kv", "X_kv"),
                 backward_method="backward", backward_parameters=("grad_output",),
                 gradients="inputs", gradients_from=(("dW", "layer.dW"),))
    (dx_q, dx_kv, dw), _ = interface.call(Built, spec, TWO_INPUTS, (d_y, x_q, x_kv, w),
                                          check_binding)
    d_in = d_y @ w.T
    np.testing.assert_allclose(dx_q, d_in)
    np.testing.assert_allclose(dx_kv, 5 * d_in)  # key (2x) and value (3x): X_kv's two paths
    np.testing.assert_allclose(dw, (x_q + 2 * x_kv).T @ d_y)


def test_a_weight_gradient_of_a_linear_layer_is_read_in_the_tasks_layout() -> None:
    """CMU's Linear keeps W as (out, in) and its dLdW alike: with ``projections = "linear"``
    the weight is handed over transposed and its gradient read back transposed."""
    rng = np.random.default_rng(2)
    d_y, x_q, x_kv = (rng.normal(size=(3, 4)) for _ in range(3))
    w = rng.normal(size=(4, 4))
    task = {**TWO_INPUTS, "arguments": ["grad_output", "X_q", "X_kv", "W_q"],
            "outputs": ["dX_q", "dX_kv", "dW_q"]}

    class Linear(Mixer):
        def forward(self, query: Any, key: Any, value: Any) -> Any:
            self.layer.W = self.W_out_in.T  # (the mixer computes x @ W)
            return super().forward(query, key, value)

    spec = _spec(kind="class", method="forward", parameters=("X_q", "X_kv", "X_kv"),
                 projections="linear", weights=(("W_out_in", "W_q"),),
                 backward_method="backward", backward_parameters=("grad_output",),
                 gradients="inputs", gradients_from=(("dW_q", "layer.dW"),))

    class Transposed(Linear):
        def backward(self, d_output: Any) -> tuple[Any, ...]:
            grads = super().backward(d_output)
            self.layer.dW = self.layer.dW.T  # (out, in), as nn.Linear's weight.grad
            return grads

    (_, _, dw), _ = interface.call(Transposed, spec, task, (d_y, x_q, x_kv, w), check_binding)
    np.testing.assert_allclose(dw, (x_q + 2 * x_kv).T @ d_y)


def test_a_backward_that_is_missing_or_gives_no_gradient_is_named() -> None:
    spec = _spec(kind="class", method="forward", parameters=("X_q", "X_kv", "X_kv"),
                 backward_method="grad", backward_parameters=("grad_output",),
                 gradients="inputs", gradients_from=(("dW", "layer.dW"),))
    args = tuple(np.ones((2, 2)) for _ in range(4))

    class Built(Mixer):
        def __init__(self) -> None:
            super().__init__()
            self.layer.W = np.eye(2)

    with pytest.raises(interface.InterfaceError, match="has no method `grad`"):
        interface.call(Built, spec, TWO_INPUTS, args, check_binding)

    class OnlyQuery(Built):
        def backward(self, d_output: Any) -> Any:
            super().backward(d_output)
            return (d_output,)

    spec["backward_method"] = "backward"
    with pytest.raises(interface.InterfaceError, match="no gradient of X_kv came back"):
        interface.call(OnlyQuery, spec, TWO_INPUTS, args, check_binding)


# --- the child's side: torch.autograd.Function -----------------------------------------------

def test_an_autograd_function_gets_its_gradients_through_grad() -> None:
    torch = pytest.importorskip("torch")

    class Mix(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, q: Any, k: Any, v: Any, w: Any) -> Any:
            ctx.save_for_backward(q, k, v, w)
            return (q + 2 * k + 3 * v) @ w

        @staticmethod
        def backward(ctx: Any, d_y: Any) -> Any:
            q, k, v, w = ctx.saved_tensors
            d_in = d_y @ w.T
            return d_in, 2 * d_in, 3 * d_in, (q + 2 * k + 3 * v).T @ d_y

    rng = np.random.default_rng(1)
    d_y, x_q, x_kv = (rng.normal(size=(3, 4)) for _ in range(3))
    w = rng.normal(size=(4, 4))
    spec = _spec(kind="autograd", arrays="torch", parameters=("X_q", "X_kv", "X_kv", "W"),
                 backward_parameters=("grad_output",), gradients="grad")
    task = {**TWO_INPUTS, "outputs": ["dX_q", "dX_kv", "dW"]}
    (dx_q, dx_kv, dw), _ = interface.call(Mix, spec, task, (d_y, x_q, x_kv, w), check_binding)
    d_in = d_y @ w.T
    np.testing.assert_allclose(dx_q.numpy(), d_in)
    np.testing.assert_allclose(dx_kv.numpy(), 5 * d_in)
    np.testing.assert_allclose(dw.numpy(), (x_q + 5 * x_kv).T @ d_y)


def _flash_task() -> dict[str, Any]:
    return registry.canonical_call("flash_attention_forward").as_dict()


def test_an_output_found_among_saved_tensors_must_be_the_only_one_of_its_shape() -> None:
    torch = pytest.importorskip("torch")

    def function(saved_rows: int) -> Any:
        class Saves(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, q: Any, k: Any, v: Any, is_causal: bool = False) -> Any:
                rows = [q.sum(-1) + i for i in range(saved_rows)]
                ctx.save_for_backward(q, *rows)
                return q.clone()

        return Saves

    spec = _spec(kind="autograd", arrays="torch", parameters=("Q", "K", "V", "causal"),
                 batch="one", saved_outputs=(("L", "per-query"),))
    q = np.ones((2, 5, 4))
    (_, lse), _ = interface.call(function(1), spec, _flash_task(), (q, q, q), check_binding)
    assert tuple(lse.shape) == (2, 5)
    for count in (0, 2):
        with pytest.raises(interface.InterfaceError,
                           match=rf"one saved tensor of shape \(2, 5\).*found {count}"):
            interface.call(function(count), spec, _flash_task(), (q, q, q), check_binding)


def test_a_factory_must_return_the_class() -> None:
    pytest.importorskip("torch")
    spec = _spec(kind="autograd", arrays="torch", factory=True,
                 parameters=("Q", "K", "V", "causal"))

    def returns_an_instance() -> Any:
        return object()

    q = np.ones((5, 4))
    with pytest.raises(interface.InterfaceError, match="returned a object, not a class"):
        interface.call(returns_an_instance, spec, _flash_task(), (q, q, q), check_binding)
    with pytest.raises(interface.InterfaceError, match="not a torch.autograd.Function"):
        interface.call(lambda: dict, spec, _flash_task(), (q, q, q), check_binding)


# --- tile sizes fixed inside: the probes choose lengths ----------------------------------------

def test_fixed_tile_sizes_are_what_every_test_input_is_graded_with() -> None:
    course = get("cs336-a2-flash-attention-forward")
    probes = course.probes()
    assert probes and all(p.args[4:6] == (16, 16) for p in probes)
    assert all(p.args[2].shape[-1] == p.args[0].shape[-1] for p in probes)  # V is d wide
    # lengths that 16 does not divide remain, so the remainder tiles are still tried
    assert any(p.args[0].shape[-2] % 16 and p.args[0].shape[-2] > 16 for p in probes)
    left_out = course.left_out()
    assert "fixes block_q, block_k inside" in left_out["blocks-b"]
    assert "as many keys as queries" in left_out["causal-cached"]
    assert all(p.args[0].shape[-2] == p.args[1].shape[-2] for p in probes if p.args[3])
    # a report's reproducing call fetches the inputs as the course's code ran them
    q, k, v, causal, block_q, block_k = probe_inputs("cs336-a2-flash-attention-forward",
                                                     "remainder-tiles")
    assert (v.shape[-1], block_q, block_k) == (q.shape[-1], 16, 16)


# --- the courses' own tests pass code that is named here ---------------------------------------

def _course_flash_test(function_class: Any, is_causal: bool = False) -> bool:
    """CS336's check of the PyTorch forward, in our words: (4, 128, 64) float32, L the one
    saved tensor of shape (batch, n_queries), O and L within 1e-2."""
    import torch

    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 128, 64, requires_grad=True) for _ in range(3))
    o = function_class.apply(q, k, v, is_causal)
    [lse] = [t for t in o.grad_fn.saved_tensors if t.shape == (4, 128)]
    s = q @ k.transpose(-1, -2) / 8.0
    if is_causal:
        s = torch.where(torch.ones(128, 128, dtype=torch.bool).tril(), s, -1e6)
    return bool(torch.allclose(o, torch.softmax(s, -1) @ v, rtol=1e-2, atol=1e-2)
                and torch.allclose(lse, torch.logsumexp(s, -1), rtol=1e-2, atol=1e-2))


@pytest.mark.parametrize("fixture", ["remainder_tile_dropped", "causal_mask_tile_local"])
def test_cs336_fixtures_its_own_test_passes_are_named_here(fixture: str) -> None:
    pytest.importorskip("torch")
    module = _load(PRESETS / "cs336-a2-flash-attention-forward" / f"{fixture}.py")
    assert _course_flash_test(module.get_flashattention_autograd_function_pytorch())


def test_the_causal_path_cs336_never_tests_is_wrong_where_it_is_tried() -> None:
    pytest.importorskip("torch")
    good = _load(PRESETS / "cs336-a2-flash-attention-forward" / "correct_query_outer.py")
    bad = _load(PRESETS / "cs336-a2-flash-attention-forward" / "causal_mask_tile_local.py")
    assert _course_flash_test(good.get_flashattention_autograd_function_pytorch(), True)
    assert not _course_flash_test(bad.get_flashattention_autograd_function_pytorch(), True)


BACKWARD_PRESET = PRESETS / "cs336-a2-flash-attention-backward"


def _course_flash_backward_test(function_class: Any, is_causal: bool = False) -> bool:
    """CS336's check of the PyTorch backward, in our words: (4, 128, 64) float32 inputs that
    require gradients, a random upstream gradient, q.grad, k.grad and v.grad within 1e-2 of
    autograd through plain attention."""
    import torch

    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 128, 64, requires_grad=True) for _ in range(3))
    d_o = torch.randn(4, 128, 64)
    function_class.apply(q, k, v, is_causal).backward(d_o)
    mine = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    s = q @ k.transpose(-1, -2) / 8.0
    if is_causal:
        s = torch.where(torch.ones(128, 128, dtype=torch.bool).tril(), s, -1e6)
    (torch.softmax(s, -1) @ v).backward(d_o)
    return all(torch.allclose(a, t.grad, rtol=1e-2, atol=1e-2) for a, t in zip(mine, (q, k, v)))


@pytest.mark.parametrize("fixture", ["backward_remainder_dropped", "backward_causal_tile_local"])
def test_cs336_backward_fixtures_its_own_test_passes_are_named_here(fixture: str) -> None:
    pytest.importorskip("torch")
    module = _load(BACKWARD_PRESET / f"{fixture}.py")
    assert expected_ids(BACKWARD_PRESET / f"{fixture}.py")
    assert _course_flash_backward_test(module.get_flashattention_autograd_function_pytorch())


def test_the_causal_backward_cs336_never_tests_is_wrong_where_it_is_tried() -> None:
    pytest.importorskip("torch")
    good = _load(BACKWARD_PRESET / "correct_query_outer_split.py")
    bad = _load(BACKWARD_PRESET / "backward_causal_tile_local.py")
    assert _course_flash_backward_test(good.get_flashattention_autograd_function_pytorch(), True)
    assert not _course_flash_backward_test(bad.get_flashattention_autograd_function_pytorch(),
                                           True)


def test_the_cs336_backward_is_graded_on_causal_inputs_with_as_many_keys_as_queries() -> None:
    """The backward task's first argument is the upstream gradient: the square-causal rule
    compares the task's queries and keys, so causal inputs with more keys are left out."""
    course = get("cs336-a2-flash-attention-backward")
    assert "as many keys as queries" in course.left_out()["causal-tiles-of-one"]
    causal = [p for p in course.probes() if p.args[6]]
    assert causal and all(p.args[1].shape[-2] == p.args[2].shape[-2] for p in causal)


@pytest.mark.e2e
def test_one_cs336_class_is_graded_as_the_forward_and_the_backward_part() -> None:
    """As CS336 A2 hands it out: one autograd Function from the adapter, its forward and its
    backward each a part; a backward still raising NotImplementedError scores 0 on its part."""
    pytest.importorskip("torch")
    from grader import grade

    right = grade(BACKWARD_PRESET / "correct_recompute_tiles.py",
                  assignment="cs336-a2-flash-attention")
    assert [p["assignment"] for p in right["parts"]] == [
        "cs336-a2-flash-attention-forward", "cs336-a2-flash-attention-backward"]
    assert right["score"] == right["max_score"] == 20.0 and right["misconceptions"] == []
    wrong = grade(BACKWARD_PRESET / "backward_missing_d.py", assignment="cs336-a2-flash-attention")
    forward, backward = wrong["parts"]
    assert forward["score"] == forward["max_score"] and forward["misconceptions"] == []
    assert [m["id"] for m in backward["misconceptions"]] == ["backward-missing-d"]
    stub = grade(PRESETS / "cs336-a2-flash-attention-forward" / "causal_mask_tile_local.py",
                 assignment="cs336-a2-flash-attention")
    forward, backward = stub["parts"]
    assert [m["id"] for m in forward["misconceptions"]] == ["causal-mask-tile-local"]
    assert backward["score"] == 0 and backward["misconceptions"] == []
    assert backward["errors"]


def test_cmu_softmax_fixture_its_own_test_passes_is_named_here() -> None:
    """CMU's check of Softmax.backward, in our words: random (B, n, d) inputs, axes 0, 1, 2,
    -1, -2, an all-ones upstream gradient (for which the right answer is 0)."""
    module = _load(PRESETS / "cmu-11785-softmax-backward" / "not_moved_back.py")
    rng = np.random.default_rng(11785)
    for dim in (0, 1, 2, -1, -2):
        z = rng.normal(size=(3, 4, 5))
        layer = module.Softmax(dim=dim)
        layer.forward(z)
        assert np.allclose(layer.backward(np.ones(z.shape)), 0.0, atol=1e-5)


def test_cmu_attention_fixture_its_own_test_passes_is_named_here() -> None:
    """CMU's check of ScaledDotProductAttention, in our words: square (B, H, L, E) inputs, a
    mask that blocks nothing, an all-ones upstream gradient."""
    module = _load(PRESETS / "cmu-11785-attention-backward" / "mask_times_one_minus.py")
    right = _load(PRESETS / "cmu-11785-attention-backward" / "correct_handout.py")
    rng = np.random.default_rng(11785)
    q, k, v = (rng.normal(size=(2, 4, 8, 16)) for _ in range(3))
    mask = ~np.ones((2, 4, 8, 8), dtype=bool)  # (True = may attend in torch, inverted)
    results = []
    for source in (module, right):
        layer = source.ScaledDotProductAttention()
        out = layer.forward(q, k, v, mask=mask)
        results.append(layer.backward(np.ones_like(out)))
    for mine, expected in zip(*results):
        assert np.allclose(mine, expected, rtol=1e-4, atol=1e-4)


CMU_MHA = PRESETS / "cmu-11785-multi-head-attention-backward"
#: the mistake students made in CMU's MultiHeadAttention: keys and values split into heads with
#: the query's length, which is right only when the lengths are equal
SPLIT_WITH_QUERY_LENGTH = (
    "        x = x.reshape(x.shape[0], x.shape[1], self.num_heads, -1)",
    "        x = x.reshape(self.N, self.L, self.num_heads, -1)")


def _split_with_query_length(tmp_path: Path) -> Path:
    source = (CMU_MHA / "correct_handout.py").read_text()
    assert SPLIT_WITH_QUERY_LENGTH[0] in source
    path = tmp_path / "split_with_query_length.py"
    path.write_text(source.replace(*SPLIT_WITH_QUERY_LENGTH))
    return path


def _cmu_mha_course_test(module: ModuleType) -> list[np.ndarray]:
    """What CMU's check of MultiHeadAttention.backward compares, in our words: query, key and
    value of one length, masks that block nothing, an all-ones upstream gradient, and only the
    three returned gradients (never a layer's dLdW)."""
    rng = np.random.default_rng(11785)
    n, length, d, heads = 2, 5, 8, 2
    layer = module.MultiHeadAttention(d, heads)
    layer.init_weights(*(rng.normal(size=s) for s in [(d, d), (d,)] * 4))
    query, key, value = (rng.normal(size=(n, length, d)) for _ in range(3))
    out = layer.forward(query, key, value, key_padding_mask=np.zeros((n, length), dtype=bool),
                        attn_mask=np.zeros((length, length), dtype=bool))
    return list(layer.backward(np.ones_like(out)))


def _passes_cmu_mha_course_test(module: ModuleType) -> bool:
    right = _cmu_mha_course_test(_load(CMU_MHA / "correct_handout.py"))
    return all(np.allclose(mine, expected, rtol=1e-4, atol=1e-4)
               for mine, expected in zip(_cmu_mha_course_test(module), right, strict=True))


def test_cmu_mha_split_with_the_query_length_passes_its_course_test_not_ours(
        tmp_path: Path) -> None:
    """Keys and values split into heads with the query's length: CMU's own test (equal
    lengths, all-ones upstream gradient) cannot tell it from the right code; our test inputs
    with more keys than queries mark it down, naming no misconception of ours."""
    path = _split_with_query_length(tmp_path)
    assert _passes_cmu_mha_course_test(_load(path))
    report = grade_trusted(path, "cmu-11785-multi-head-attention-backward")
    assert report["misconceptions"] == []
    assert 0 < report["score"] < report["max_score"]
    [error] = report["errors"]  # (the shapes disagree when n != m: the line is shown)
    assert error["kind"] == "runtime-error" and "in forward" in error["message"]


def test_cmu_mha_weight_gradient_transposed_passes_its_course_test_and_is_named() -> None:
    """CMU's test compares only the returned gradients: dLdW stored (in, out) passes it, and
    the grader, which reads each layer's dLdW, names it."""
    assert _passes_cmu_mha_course_test(_load(CMU_MHA / "weight_grad_transposed.py"))
    assert not _passes_cmu_mha_course_test(_load(CMU_MHA / "dxkv_missing_path.py"))
    report = grade_trusted(CMU_MHA / "weight_grad_transposed.py",
                           "cmu-11785-multi-head-attention-backward")
    assert [m["id"] for m in report["misconceptions"]] == ["weight-grad-transposed"]


def test_a_key_padding_mask_that_pads_nothing_is_derived_from_the_keys() -> None:
    """CMU's `_merge_masks` reads a (N, S) key padding mask beside the (L, S) attention mask:
    the derived `no_key_padding` is all False with the keys' leading axes and length."""
    assert "no_key_padding" in registry.derivable(("X_q", "X_kv"))
    assert "no_key_padding" not in registry.derivable(("Q", "K", "V"))
    spec = registry.get("cmu-11785-multi-head-attention-backward").interface.as_dict()
    task = registry.canonical_call("multi_head_attention_backward").as_dict()
    rng = np.random.default_rng(0)
    args = [rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(6, 4)),
            *(rng.normal(size=(4, 4)) for _ in range(4)), 2, None]
    keywords = interface.course_keywords(spec, interface.course_arguments(spec, task, args)[2],
                                         lambda a: a)
    assert keywords["key_padding_mask"].shape == (1, 6)
    assert keywords["key_padding_mask"].dtype == bool and not keywords["key_padding_mask"].any()
    assert keywords["attn_mask"].shape == (3, 6) and not keywords["attn_mask"].any()


# --- through the sandbox ---------------------------------------------------------------------

@pytest.mark.e2e
@pytest.mark.parametrize("fixture", [
    "cmu-11785-attention-backward/backward_missing_scale.py",
    "cmu-11785-softmax-backward/correct_handout.py",
    "torch-autograd-attention-backward/dk_not_transposed.py",
    "cs336-a2-flash-attention-forward/remainder_tile_dropped.py",
    "cs336-a2-flash-attention-backward/backward_missing_d.py",
])
def test_the_child_calls_steps_in_the_sandbox_as_in_process(fixture: str, graded: Any) -> None:
    """The sandbox's child runs the steps (forward then backward, .apply and .grad, saved
    tensors) as the in-process grading of the fixtures does: the same score and names."""
    from grader import grade

    path = PRESETS / fixture
    if "torch" in path.read_text():
        pytest.importorskip("torch")
    report = grade(path, assignment=path.parent.name)
    expected = graded(path)
    assert (report["score"], [m["id"] for m in report["misconceptions"]]) == (
        expected["score"], [m["id"] for m in expected["misconceptions"]])


def test_a_cmu_mask_that_works_only_at_full_shape_fails_where_the_course_allows_less(
        tmp_path: Path) -> None:
    """CMU's mask is "(N, ..., H, L, S) or broadcastable": one (L, S) matrix for every batch and
    head reaches the code as that (``mask_shape = "broadcast"``), so boolean indexing, right
    at full shape, fails on the masked test inputs with its line; no mistake is claimed."""
    source = (PRESETS / "cmu-11785-attention-backward" / "correct_swapaxes.py").read_text()
    source = source.replace("# expect:\n", "").replace(
        "scores = np.where(mask, -self.eps, scores)", "scores[mask] = -self.eps")
    path = tmp_path / "full_shape_only.py"
    path.write_text(source)
    report = grade_trusted(path, "cmu-11785-attention-backward")
    assert report["misconceptions"] == []
    assert 0 < report["score"] < report["max_score"]
    [error] = report["errors"]
    assert error["kind"] == "runtime-error" and "in forward" in error["message"]
    assert "boolean index did not match" in error["message"]
    failed = {c["id"] for c in report["checks"] if not c["passed"]}
    assert "values-masked" in failed and "values-2d" not in failed


STEP_PRESETS = ("cmu-11785-attention-backward", "cmu-11785-softmax-backward",
                "cmu-11785-multi-head-attention-backward",
                "torch-autograd-attention-backward", "cs336-a2-flash-attention-forward",
                "cs336-a2-flash-attention-backward")


@pytest.mark.parametrize("path", [p for preset in STEP_PRESETS
                                  for p in sorted((PRESETS / preset).glob("*.py"))],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_step_preset_fixtures_on_a_hidden_seed(path: Path, graded: Any) -> None:
    """On hidden test inputs too, every correct fixture gets full marks and is accused of
    nothing, and every buggy one is named exactly (test_presets.py grades the public ones)."""
    if "torch" in path.read_text():
        pytest.importorskip("torch")
    report = graded(path, seed=3)
    assert sorted(m["id"] for m in report["misconceptions"]) == expected_ids(path)
    if expected_ids(path):
        assert report["score"] < report["max_score"]
    else:  # (an exact computation that never tiles loses the tiling check and nothing else)
        failed = {c["id"]: c["max_points"] for c in report["checks"] if not c["passed"]}
        assert sorted(failed) == declared_failures(path) and report["errors"] == []
        assert report["score"] == pytest.approx(report["max_score"] - sum(failed.values()))
