"""Each task in one place, with named outputs: the task records agree with their canonical
calls, a return is read by the task's output names, and too few or too many arrays are told
by name. Fast tier: nothing here starts a process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import registry
from grader.core.assignments import get
from grader.core.tasks import build_probes, task, tasks
from grader.sandbox.returns import WrongReturn, to_arrays

A, B, C = np.ones((2, 3)), np.zeros((2, 2)), np.full((3,), 2.0)


@pytest.mark.parametrize("name", sorted(registry.canonical_calls()))
def test_each_tasks_reference_gives_one_value_per_declared_output(name: str) -> None:
    canonical = registry.canonical_call(name)
    for probe in build_probes(name, 0):
        assert len(probe.args) <= len(canonical.arguments), probe.id
        outputs = task(name).reference(*probe.args)
        assert len(outputs) == len(canonical.outputs), probe.id
        assert outputs[0] is not None
        pipeline = task(name).pipeline({}, *probe.args)
        assert len(pipeline) == len(canonical.outputs), probe.id


def test_every_canonical_call_names_only_its_own_arguments_and_outputs() -> None:
    for canonical in registry.canonical_calls().values():
        assert set(canonical.optional_outputs) < set(canonical.outputs)
        assert canonical.outputs[0] not in canonical.optional_outputs
        assert set(canonical.sequences) <= set(canonical.arguments)
        assert {name for name, _ in canonical.defaults} <= set(canonical.arguments)


def test_an_unknown_task_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown task 'flash'.*attention"):
        task("flash")
    with pytest.raises(ValueError, match=r"unknown task 'flash'.*attention"):
        registry.canonical_call("flash")


def test_the_returned_arrays_are_read_by_the_tasks_names() -> None:
    assert list(to_arrays(A)) == ["output"]
    assert list(to_arrays((A, B))) == ["output", "weights"]
    assert list(to_arrays((A, None))) == ["output"]  # the weights left out
    assert list(to_arrays([A, B])) == ["output", "weights"]  # a list of two arrays
    named = to_arrays((A, B, C), ("dQ", "dK", "dV"), ())
    assert list(named) == ["dQ", "dK", "dV"]
    np.testing.assert_array_equal(named["dV"], C)


def test_a_list_of_same_shaped_gradients_is_each_of_them() -> None:
    """[dQ, dK, dV] of one shape is three arrays, not one stacked (3, n, d) array; a list of
    rows stays one array where the task has a single output."""
    named = to_arrays([A, A + 1, A + 2], ("dQ", "dK", "dV"), ())
    assert list(named) == ["dQ", "dK", "dV"]
    np.testing.assert_array_equal(named["dK"], A + 1)
    assert to_arrays([[1.0, 2.0], [3.0, 4.0]], ("output",), ())["output"].shape == (2, 2)


@pytest.mark.parametrize("value,outputs,optional,message", [
    ((A, B, C), ("output", "weights"), ("weights",),
     "returned 3 arrays; expected 1 or 2: output, and optionally weights"),
    ((A, B), ("dQ", "dK", "dV"), (), "returned 2 arrays; expected 3: dQ, dK, dV"),
    (A, ("O", "L"), (), "returned 1 array; expected 2: O, L"),
    ((A, B), ("output",), (), "returned 2 arrays; expected 1: output"),
    ((A, None, C), ("dQ", "dK", "dV"), (), "dtype object"),  # a required one missing
])
def test_too_few_or_too_many_arrays_are_told_by_name(
        value: object, outputs: tuple[str, ...], optional: tuple[str, ...],
        message: str) -> None:
    with pytest.raises(WrongReturn, match=message.replace("(", r"\(")):
        to_arrays(value, outputs, optional)


def _softmax_course(tmp_path: Path, table: str) -> str:
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(
        'id = "c"\nkind = "course"\ntask = "softmax"\nfunction = "f"\nsignature = "f(x)"\n'
        + table)
    return str(folder)


def test_a_course_dict_return_names_one_key_per_output(tmp_path: Path) -> None:
    folder = _softmax_course(tmp_path, '[interface]\nreturns = "dict"\n'
                                       'return_keys = ["probs", "logits"]\n')
    with pytest.raises(ValueError, match="return_keys: the dict's key of each of output"):
        registry.get(folder)


def test_only_a_built_in_assignment_defines_a_tasks_canonical_call(tmp_path: Path) -> None:
    folder = _softmax_course(tmp_path, '[canonical]\narguments = ["x"]\n')
    with pytest.raises(ValueError, match=r"\[canonical\] defines a task"):
        registry.get(folder)


def test_an_option_a_task_cannot_honour_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="batch = 'heads' is not for the rope task"):
        registry._interface("rope", {"batch": "heads"}, "here")
    with pytest.raises(ValueError, match="ndim and axis are for the softmax task"):
        registry._interface("attention", {"axis": 0}, "here")


def test_the_child_is_told_each_tasks_call_not_its_name() -> None:
    """What the child gets for a call: the canonical call (arguments, outputs, sequences) as
    data; the course's interface only when it is not SPEC's own."""
    calling = get("attention").calling()
    assert calling["interface"] is None
    assert calling["task"]["outputs"] == ["output", "weights"]
    assert calling["task"]["keys"] == "K"
    course = get("cs336-rope").calling()
    assert course["interface"]["kind"] == "class"
    assert course["task"]["arguments"] == ["x", "positions", "theta"]
    assert "name" not in course["task"] and "rope" not in course["task"].values()


def test_every_task_module_is_found() -> None:
    assert set(tasks()) == set(registry.canonical_calls())
    assert all(t.concepts and t.make_probes for t in tasks().values())


@pytest.mark.e2e
def test_a_submission_returning_an_extra_array_is_told_which_it_should_return(
        grade_source: Callable[..., dict[str, Any]]) -> None:
    report = grade_source(
        "import numpy as np\n"
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n"
        "    if mask is not None:\n"
        "        s = np.where(mask, s, -np.inf)\n"
        "    w = np.exp(s - s.max(-1, keepdims=True))\n"
        "    w = w / w.sum(-1, keepdims=True)\n"
        "    return w @ V, w, s\n", assignment="attention")
    [error] = report["errors"]
    assert error["kind"] == "wrong-shape"
    assert "returned 3 arrays; expected 1 or 2: output, and optionally weights" in \
        error["message"]
    assert report["misconceptions"] == []


@pytest.mark.parametrize("task_name,interface,message", [
    # a derived name the task cannot derive (a causal mask has no d_model): every correct
    # student got 0 with KeyError: 'd_model'
    ("causal_mask", 'parameters = ["n", "d_model"]',
     "parameter 'd_model' is not one of n, m, seq_len, tokens (d_model is worked out from"),
    # a TOML date-time among the constants: an internal grader error after the code ran
    ("attention", "constants = { when = 1979-05-27T07:32:00Z }",
     "constants.when = datetime.datetime(1979, 5, 27"),
    ("attention", "constants = { dropout = { p = 0.1 } }", "constants.dropout"),
    # a typo two tables deep in a constructor: a traceback and no report
    ("causal_self_attention",
     'kind = "class"\nparameters = ["X"]\n'
     'constructor = { config = { n_embd = "d_model", inner = { n_head = "num_head" } } }',
     "constructor.config.inner.n_head: parameter 'num_head' is not one of"),
    ("causal_self_attention", 'kind = "class"\nparameters = ["X"]\nglobals = { block = [1] }',
     "globals.block = [1] must be an argument's name or a number"),
    ("attention", 'kind = "class"\nparameters = ["Q", "K", "V"]\nweights = { "w" = "W_q" }',
     "weights.w = 'W_q': each part must be one of the task's arguments"),
    ("softmax", 'parameters = ["x", "valid_lens"]', "parameter 'valid_lens' is not one of"),
])
def test_a_course_folder_is_checked_before_any_student_code_runs(
        tmp_path: Path, task_name: str, interface: str, message: str) -> None:
    """What a teacher's folder says is checked when it is read, with a message naming the
    key: never accepted, then charged to every student or crashing the grader."""
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(
        f'id = "c"\nkind = "course"\ntask = "{task_name}"\nfunction = "f"\n'
        f'signature = "f()"\n[interface]\n{interface}\n')
    with pytest.raises(ValueError) as raised:
        registry.get(str(folder))
    assert message in str(raised.value)


def test_every_derived_argument_a_task_offers_is_one_the_child_derives() -> None:
    """The registry offers a derived argument only where the child works it out (a test
    input of every task, through ``interface.course_arguments``)."""
    from grader.sandbox import interface

    for name, canonical in registry.canonical_calls().items():
        probe = build_probes(name, 0)[0]
        spec = {"parameters": list(canonical.arguments)}
        *_, values, _ = interface.course_arguments(spec, canonical.as_dict(), probe.args)
        for derived in registry.derivable(canonical.arguments):
            assert values.get(derived) is not None or derived == "valid_lens", (name, derived)


@pytest.mark.parametrize("task_name,interface,message", [
    ("softmax", 'mask = "block"', "mask is for tasks that take a mask; the softmax task"),
    ("rope", 'mask_always = true', "mask_always is for tasks that take a mask"),
    ("causal_mask", 'mask_shape = "shared"', "mask_shape is for tasks that take a mask"),
    ("causal_mask", 'mask = "lengths"', "says no mask; the causal_mask task returns one"),
])
def test_a_mask_convention_a_task_cannot_honour_is_refused(
        tmp_path: Path, task_name: str, interface: str, message: str) -> None:
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(
        f'id = "c"\nkind = "course"\ntask = "{task_name}"\nfunction = "f"\n'
        f'signature = "f()"\n[interface]\n{interface}\n')
    with pytest.raises(ValueError, match=message):
        registry.get(str(folder))


BLOCKED_ONES = ("def look_ahead(n, m=None):\n    m = n if m is None else m\n"
                "    return 1 - np.tril(np.ones((n, m)), k=m - n)\n")
ADDITIVE = ("def look_ahead(n, m=None):\n    m = n if m is None else m\n"
            "    keep = np.tril(np.ones((n, m), dtype=bool), k=m - n)\n"
            "    return np.where(keep, 0.0, -np.inf)\n")


@pytest.mark.e2e
@pytest.mark.parametrize("convention,source,named", [
    ("block", BLOCKED_ONES, []),  # the TensorFlow tutorial's 1 - band_part: 1 = blocked
    (None, BLOCKED_ONES, ["causal-mask-inverted"]),  # the same under SPEC's True = may attend
    ("zero-blocks", BLOCKED_ONES, ["causal-mask-inverted"]),
    ("zero-blocks", ADDITIVE, ["causal-mask-inverted"]),  # `mask == 0` blocks: read inverted
    (None, ADDITIVE, []),  # SPEC accepts an additive mask
    ("additive", ADDITIVE, []),
])
def test_a_returned_mask_is_read_in_the_courses_declared_convention(
        tmp_path: Path, grade_source: Callable[..., dict[str, Any]], convention: str | None,
        source: str, named: list[str]) -> None:
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "assignment.toml").write_text(
        'id = "c"\nkind = "course"\ntask = "causal_mask"\nfunction = "look_ahead"\n'
        'signature = "look_ahead(n, m=None)"\n[interface]\nparameters = ["n", "m"]\n'
        + (f'mask = "{convention}"\n' if convention else ""))
    report = grade_source("import numpy as np\n\n" + source, assignment=str(folder))
    assert [m["id"] for m in report["misconceptions"]] == named
    assert (report["score"] == report["max_score"]) == (not named)
