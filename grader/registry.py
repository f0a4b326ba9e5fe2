"""The assignments the grader knows, each one folder: ``assignments/<id>/assignment.toml`` (its
interface and the task it is graded on), ``rubric.json`` (the points), ``starter/``.

Import-light (standard library only), so the command line and every integration can list and
check assignments without loading NumPy. The numeric side of a task (reference, probes, variants,
concepts) is in ``grader/tasks/<task>.py``; ``grader.core.assignments`` joins the two.

Adding an assignment whose task exists = adding its folder. Nothing else is edited.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

INTERFACE_FILE = "assignment.toml"
RUBRIC_FILE = "rubric.json"
_SOURCE_TREE = Path(__file__).resolve().parents[1] / "assignments"


#: values a course's parameter can also receive: sizes derived from the probe
DERIVED_ARGUMENTS = ("d_model", "d_k", "valid_lens", "seq_len", "zeros", "positions_range",
                     "logits", "positions_batch", "table_length", "rope_on", "no_key_padding",
                     "positions_per_batch", "tokens")
#: the canonical arguments each derived one is worked out from (any one of them suffices; the
#: child's ``interface._derive`` derives exactly these): a task without any of them cannot
#: give it, and a course that asks for it is refused before anything runs
DERIVED_FROM: dict[str, tuple[str, ...]] = {
    "d_model": ("X_q", "Q", "X", "x", "d_model"),
    "d_k": ("Q", "num_heads"),
    "seq_len": ("X_q", "Q", "X", "x", "n_positions", "n"),
    "zeros": ("n_positions",),
    "positions_range": ("theta",),
    "valid_lens": ("mask",),
    # logits whose softmax is the given output, log(output): for a softmax layer whose backward
    # reads what its own forward kept (CMU 11-785's `Softmax(dim).forward(Z)`)
    "logits": ("output",),
    # RoPE in two steps (``rope_tables``): positions as a (1, n) batch, the rows of a table
    "positions_batch": ("theta",),
    # RoPE's positions for every batch index of the input, (B, n) (Llama's and Hugging Face's
    # position_ids, torchtune's input_pos): with `axes`, B is the input's first axis; without,
    # the input's leading axes, (..., n)
    "positions_per_batch": ("theta",),
    # a token tensor (B, n) (or (B, n, d_model)) in place of the length n, for a mask or an
    # encoding built from the tokens' shape (`get_subsequent_mask(seq)`, `forward(token_ids)`)
    "tokens": ("n", "n_positions"),
    "table_length": ("theta",),
    # a model whose theta is fixed inside it: is RoPE on (the probe has a theta)?
    "rope_on": ("theta",),
    # a key padding mask that pads nothing, all False (..., m): for a class whose forward needs
    # one beside its attention mask (CMU 11-785's `MultiHeadAttention._merge_masks`)
    "no_key_padding": ("X_kv",),
}


def derivable(arguments: tuple[str, ...]) -> tuple[str, ...]:
    """The derived arguments a task with these canonical arguments can give a course's code."""
    return tuple(name for name in DERIVED_ARGUMENTS
                 if any(source in arguments for source in DERIVED_FROM[name]))
MASK_CONVENTIONS = {
    "keep": "a boolean mask, True where the query may attend to the key",
    "block": "a boolean mask, True where the key is blocked (as torch.nn.MultiheadAttention)",
    "float-keep": "a float mask, 1.0 where the query may attend and 0.0 where it may not",
    "zero-blocks": "a 0/1 mask, 0 where the key is blocked (`mask == 0` is filled with -inf)",
    "additive": "an additive float mask, 0 where the query may attend and -inf where it may not",
    "lengths": "valid lengths: each query attends to the first valid_lens keys",
    "none": "no mask",
}
INTERFACE_CHOICES = {
    "kind": ("function", "class", "autograd"),
    "mask": tuple(MASK_CONVENTIONS),
    "returns": ("output", "output-weights", "weights-output", "dict"),
    "arrays": ("numpy", "torch", "tensorflow", "jax"),
    "dtype": ("float64", "float32"),
    "projections": ("x@W", "linear"),
    "batch": ("any", "one", "heads"),
    "mask_shape": ("full", "shared", "broadcast"),
    "fused": ("blocks", "per-head"),
    "pairs": ("interleaved", "halves"),
    # RoPE's input as its code takes it (as `rope_tables.axes`): as it comes, (B, h, n, d) or
    # (B, n, h, d)
    "axes": ("any", "bhnd", "bnhd"),
}
#: the keys of ``[interface.tokens]`` (the token tensor given for the length n), with what each
#: holds, and the dtypes a token tensor may have
TOKEN_KEYS: dict[str, Any] = {"batch": int, "dtype": str, "features": bool}
TOKEN_DTYPES = ("int64", "int32", "float32", "float64")
#: the most rows a token tensor is given
MAX_TOKEN_BATCH = 8


@dataclass(frozen=True)
class Canonical:
    """A task's canonical call (SPEC section 1), read from the ``[canonical]`` table of the
    built-in assignment that defines the task: what every course's interface of the task maps
    onto. Plain data, sent as it is to the child (``grader/sandbox/interface.py``)."""

    task: str
    #: the arguments, in the order of the canonical signature
    arguments: tuple[str, ...]
    #: arguments that may be None (no mask, no RoPE, square masks, positions 0..n-1)
    optional: tuple[str, ...] = ()
    #: the value of an argument a test input leaves out
    defaults: tuple[tuple[str, Any], ...] = ()
    #: what the function returns, by name, in order; ``optional_outputs`` may be left out
    outputs: tuple[str, ...] = ("output",)
    optional_outputs: tuple[str, ...] = ()
    #: the (..., n, d) arrays a batch layout folds; ``queries`` and ``keys`` give a mask's
    #: (n, m) (by default the first and the last of them)
    sequences: tuple[str, ...] = ()
    queries: str = ""
    keys: str = ""
    #: where a course's "halves" layout of rotary pairs acts: "input" (the features of the
    #: argument rotated) or "projections" (the columns of W_q and W_k, with RoPE); "" for none
    rotary_pairs: str = ""
    #: the batch layouts a course's code of this task may declare, and a hint when it declares
    #: another
    batch: tuple[str, ...] = ("any", "one")
    batch_hint: str = ""
    #: a course may fix the axis the function normalises, or the number of axes it takes
    axis_options: bool = False
    #: the output is a mask: a course's ``mask`` convention is how the masks it returns are
    #: read (a mask the task takes as an argument is converted to the course's instead)
    returns_mask: bool = False
    #: the output is a table with one row per position: a course may say which row its code
    #: zeroes for padding (``padding_row``)
    padding_row: bool = False

    def default(self, argument: str) -> Any:
        return dict(self.defaults).get(argument)

    def as_dict(self) -> dict[str, Any]:
        """What the child needs to call a course's code of this task."""
        return {"arguments": list(self.arguments), "optional": list(self.optional),
                "defaults": [list(p) for p in self.defaults], "outputs": list(self.outputs),
                "optional_outputs": list(self.optional_outputs),
                "sequences": list(self.sequences),
                "queries": self.queries or (self.sequences[0] if self.sequences else ""),
                "keys": self.keys or (self.sequences[-1] if self.sequences else ""),
                "rotary_pairs": self.rotary_pairs, "returns_mask": self.returns_mask}


CANONICAL_KEYS: dict[str, Any] = {
    "arguments": list, "optional": list, "defaults": dict, "outputs": list,
    "optional_outputs": list, "sequences": list, "queries": str, "keys": str,
    "rotary_pairs": str, "batch": list, "batch_hint": str, "axis_options": bool,
    "returns_mask": bool, "padding_row": bool,
}


def _canonical_call(task: str, data: dict[str, Any], where: str) -> Canonical:
    _check_keys(data, CANONICAL_KEYS, where, "[canonical]")
    arguments = tuple(str(a) for a in data.get("arguments", ()))
    named = [*data.get("optional", ()), *dict(data.get("defaults", {})),
             *data.get("sequences", ()), *[data[k] for k in ("queries", "keys") if k in data]]
    unknown = [a for a in named if a not in arguments]
    if not arguments or unknown:
        raise ValueError(f"{where}: [canonical] names arguments it does not list: "
                         f"{', '.join(map(str, unknown)) or 'none listed'}")
    outputs = tuple(str(o) for o in data.get("outputs", ("output",)))
    return Canonical(
        task=task, arguments=arguments, optional=tuple(str(a) for a in data.get("optional", ())),
        defaults=tuple((str(k), v) for k, v in dict(data.get("defaults", {})).items()),
        outputs=outputs,
        optional_outputs=tuple(str(o) for o in data.get("optional_outputs", ())),
        sequences=tuple(str(a) for a in data.get("sequences", ())),
        queries=str(data.get("queries", "")), keys=str(data.get("keys", "")),
        rotary_pairs=str(data.get("rotary_pairs", "")),
        batch=tuple(str(b) for b in data.get("batch", ("any", "one"))),
        batch_hint=str(data.get("batch_hint", "")),
        axis_options=bool(data.get("axis_options", False)),
        returns_mask=bool(data.get("returns_mask", False)),
        padding_row=bool(data.get("padding_row", False)),
    )


@cache
def canonical_calls() -> dict[str, Canonical]:
    """Every task's canonical call, from the built-in assignments that define the tasks."""
    found: dict[str, Canonical] = {}
    root = _builtin_root()
    for folder in sorted(root.iterdir(), key=lambda f: f.name):
        file = folder / INTERFACE_FILE
        if not (folder.is_dir() and file.is_file()):
            continue
        data = tomllib.loads(file.read_text(encoding="utf-8"))
        if "canonical" in data:
            task = str(data.get("task", ""))
            found[task] = _canonical_call(task, dict(data["canonical"]), f"{folder}/{INTERFACE_FILE}")
    return found


def canonical_call(task: str) -> Canonical:
    """The canonical call of ``task`` (``ValueError`` naming the known tasks)."""
    calls = canonical_calls()
    if task not in calls:
        raise ValueError(f"unknown task {task!r} (known: {', '.join(calls)})")
    return calls[task]


def canonical_arguments(task: str) -> tuple[str, ...]:
    """The task's canonical arguments, in the order of its canonical signature."""
    return canonical_call(task).arguments


#: what to install for the framework an interface names (its arrays), where submissions are
#: graded: Gradescope's image, the Classroom action
FRAMEWORK_PACKAGES = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax[cpu]"}
#: the distributions that install each framework's module (a build for one kind of machine,
#: a nightly): given by the instructor, one of them is the framework, not a package beside it
FRAMEWORK_VARIANTS = {
    "torch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                   "tensorflow-macos", "tensorflow-aarch64", "tf-nightly", "tf-nightly-cpu",
                   "tf-nightly-gpu"),
    "jax": ("jax",),
}


def requirement_names(given: str) -> set[str]:
    """The distributions one pip argument string names (``torch --index-url URL``,
    ``jax[cuda12]>=0.4``, ``torch @ URL``, a wheel's URL), normalised: lower case, ``-``."""
    import re
    import shlex

    names = set()
    for word in shlex.split(given):
        if word.startswith("-") or "://" in word and not word.endswith(".whl"):
            continue  # an option, its URL
        if word.endswith(".whl"):  # (a wheel's file name starts with its distribution's)
            word = word.rsplit("/", 1)[-1].split("-", 1)[0]
        name = re.split(r"[\[<>=!~;@ ]", word.strip(), maxsplit=1)[0]
        if name:
            names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names


def framework_packages(interface: Interface, given: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The framework package the interface needs, unless ``given`` (pip arguments, one string
    per package) already names it or a variant of it (``tensorflow-cpu``, ``jax[cuda12]``,
    ``torch --index-url URL``)."""
    package = FRAMEWORK_PACKAGES.get(interface.arrays)
    if package is None:
        return ()
    named = set().union(*(requirement_names(g) for g in given))
    return () if named & set(FRAMEWORK_VARIANTS[interface.arrays]) else (package,)


@dataclass(frozen=True)
class Interface:
    """How a course's code is called: the canonical arguments of the task mapped to the course's
    parameters and conventions. The defaults are SPEC section 1's own interface."""

    kind: str = "function"
    #: the course's positional parameters, each naming the canonical (or derived) argument it gets
    parameters: tuple[str, ...] = ()
    mask: str = "keep"
    returns: str = "output"
    arrays: str = "numpy"
    dtype: str = "float64"
    projections: str = "x@W"
    batch: str = "any"
    #: "shared": one (n, m) mask for the whole batch, as CS231n's attn_mask (S, T);
    #: "broadcast": a mask the same for every leading index is given as one (n, m) matrix for
    #: the code to broadcast (CMU 11-785: "(N, ..., H, L, S) or broadcastable"), others whole
    mask_shape: str = "full"
    self_attention_only: bool = False
    #: class submissions: constructor keywords (a derived argument's name, or a number)
    constructor: tuple[tuple[str, Any], ...] = ()
    #: class submissions: attribute path -> canonical weight (W_q, ...); biases listed are zeroed
    weights: tuple[tuple[str, str], ...] = ()
    biases: tuple[str, ...] = ()
    #: a fused "W_q|W_k|W_v" weight: the blocks one after the other, or interleaved head by
    #: head (q, k, v of head 0, then of head 1, ... as Megatron-style fused projections)
    fused: str = "blocks"
    #: the layout of each fused weight, where they differ (a self-attention path fused block
    #: by block and a cross-attention one head by head): attribute path -> layout
    fused_by_path: tuple[tuple[str, str], ...] = ()
    #: returns = "dict": the keys of the output and (optionally) of the weights
    return_keys: tuple[str, ...] = ()
    #: arguments given by keyword: the parameter's name -> the canonical or derived argument
    keywords: tuple[tuple[str, str], ...] = ()
    #: keyword arguments with a fixed value (dropout = 0.0, mode = "eval"), and those given None
    constants: tuple[tuple[str, Any], ...] = ()
    none: tuple[str, ...] = ()
    #: a mask is always passed (one that keeps every key for the unmasked test inputs), for code
    #: that always applies its mask
    mask_always: bool = False
    #: class submissions: the method to call (numpy-ml's layers have `forward`, no `__call__`)
    method: str = ""
    #: softmax: the number of axes the code takes (2: rows of a matrix only; 0: any), and the
    #: one axis it normalises when it takes none (-1: the last; 0: the first, column-wise)
    ndim: int = 0
    axis: int | None = None
    #: softmax: the fewest axes the code takes (2: "at least a matrix"); a test input with
    #: fewer is given with leading axes of length 1 and its answer read back without them
    min_ndim: int = 0
    #: an encoding table's row the course's code zeroes for padding (`padding_idx`): not
    #: compared, and read as the reference's in every check
    padding_row: int | None = None
    #: module-level names the course's code reads (`n_embd = 384` in the GPT lecture), set in
    #: the submission's namespace before its class is built: name -> a derived argument or a number
    globals: tuple[tuple[str, Any], ...] = ()
    #: leading axes of length 1 the course's code puts in front of its answer (DLS's encodings
    #: and look-ahead masks are (1, n, ...)): taken off before it is compared
    squeeze: int = 0
    #: RoPE's pairs of features: SPEC's neighbours (2i, 2i+1), or "halves", (i, i + d/2), the
    #: "rotate half" layout of GPT-NeoX and Hugging Face
    pairs: str = "interleaved"
    #: the function named is a factory called with no arguments for the class (CS336's adapters
    #: `get_flashattention_autograd_function_pytorch()` return a torch.autograd.Function)
    factory: bool = False
    #: a backward task's call after the forward (``[interface.backward]``): a class's method on
    #: the same object, given these arguments (CMU 11-785's `.backward(d_output)`), or, for an
    #: autograd Function, the forward's output's `.backward(grad_output)`; how the gradients come
    #: back: "outputs" (returned in the task's order), "inputs" (returned, one per array
    #: parameter of the forward, summed per argument) or "grad" (the inputs' `.grad`)
    backward_method: str = ""
    backward_parameters: tuple[str, ...] = ()
    gradients: str = ""
    #: outputs read from attributes of the object after the backward: output -> attribute path
    gradients_from: tuple[tuple[str, str], ...] = ()
    #: outputs found among an autograd Function's saved tensors (`ctx.save_for_backward`):
    #: output -> how ("per-query": the one saved tensor with one value per query row, shaped
    #: as the queries without their last axis, as CS336's test finds L)
    saved_outputs: tuple[tuple[str, str], ...] = ()
    #: arguments the course's code fixes inside (CS336's tile sizes): every test input is
    #: graded as if it gave these values, and the code is not given them
    fixed: tuple[tuple[str, Any], ...] = ()
    #: the course's causal flag is defined for as many keys as queries only (CS336's test
    #: compares query i with key i): causal inputs with more keys are not probed
    causal_square_only: bool = False
    #: sequences the course's code takes at one width d, the first one's (CS336's Q, K and V
    #: are all (batch, n, d)): each test input's others are made that wide
    equal_widths: tuple[str, ...] = ()

    #: RoPE in two steps: the table builder and how its tables reach the applier (the
    #: assignment's function); see ``rope_interface.ROPE_TABLE_KEYS``
    rope_tables: tuple[tuple[str, Any], ...] = ()
    #: the theta the course's code fixes inside it (XCS224N's 10000): probes of another theta
    #: are left out
    theta: float | None = None
    #: RoPE's input as the course's code takes it: as it comes ("any"), (B, h, n, d) ("bhnd")
    #: or (B, n, h, d) ("bnhd"); for two steps ``rope_tables.axes`` says the same
    axes: str = "any"
    #: the token tensor given for a length n (``[interface.tokens]``): its rows (batch), dtype,
    #: and whether it is (B, n, d_model) (features)
    tokens: tuple[tuple[str, Any], ...] = ()
    #: class submissions: constructor keywords with a fixed value, strings too (device = "cpu")
    constructor_constants: tuple[tuple[str, Any], ...] = ()
    #: False: the code applies no output projection (the GPT lecture's MultiHeadAttention
    #: before `proj`): every test input's W_o is the identity, the heads concatenated graded
    output_projection: bool = True
    #: the class is one attention head (the GPT lecture's `Head(head_size)` on its own): built
    #: once per head with that head's columns of each weight, called on the same input, the
    #: heads' outputs concatenated in order; it holds no output projection (W_o the identity)
    one_head: bool = False

    @property
    def identity_output_projection(self) -> bool:
        """Is every test input's W_o the identity (no output projection in the code)?"""
        return self.one_head or not self.output_projection

    @property
    def stateful(self) -> bool:
        """A forward, then a backward on what it kept."""
        return bool(self.gradients)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "parameters": list(self.parameters), "mask": self.mask,
                "returns": self.returns, "arrays": self.arrays, "dtype": self.dtype,
                "projections": self.projections, "batch": self.batch,
                "mask_shape": self.mask_shape,
                "self_attention_only": self.self_attention_only,
                "constructor": [list(p) for p in self.constructor],
                "weights": [list(p) for p in self.weights], "biases": list(self.biases),
                "fused": self.fused, "fused_by_path": [list(p) for p in self.fused_by_path],
                "return_keys": list(self.return_keys),
                "keywords": [list(p) for p in self.keywords],
                "constants": [list(p) for p in self.constants], "none": list(self.none),
                "mask_always": self.mask_always, "method": self.method, "ndim": self.ndim,
                "axis": self.axis, "min_ndim": self.min_ndim, "globals": [list(p) for p in self.globals],
                "squeeze": self.squeeze, "pairs": self.pairs, "factory": self.factory,
                "backward_method": self.backward_method,
                "backward_parameters": list(self.backward_parameters),
                "gradients": self.gradients,
                "gradients_from": [list(p) for p in self.gradients_from],
                "saved_outputs": [list(p) for p in self.saved_outputs],
                "rope_tables": rope_tables_dict(self.rope_tables), "theta": self.theta,
                "output_projection": self.output_projection, "one_head": self.one_head,
                "axes": self.axes, "tokens": dict(self.tokens),
                "constructor_constants": [[k, list(v) if isinstance(v, tuple) else v]
                                          for k, v in self.constructor_constants]}

    def receives(self, argument: str) -> bool:
        """Does the course's code get this canonical argument (positionally, by keyword or in
        its constructor)?"""
        return (argument in self.parameters or argument in dict(self.keywords).values()
                or argument in _sources(self.constructor)
                or argument in rope_table_sources(self.rope_tables)
                or argument in self.backward_parameters)

    def conventions(self) -> frozenset[str]:
        """The conventions in which this interface differs from SPEC's (``catalogue.wording``)."""
        keys = set()
        if self.mask != "keep":
            keys.add(f"mask:{self.mask}")
        if self.projections != "x@W":
            keys.add(f"projections:{self.projections}")
        if self.pairs != "interleaved":
            keys.add(f"pairs:{self.pairs}")
        if self.ndim == 2 and self.axis is None:  # a softmax of a matrix's rows, no axis taken
            keys.add("ndim:2")
        return frozenset(keys)

    def canonical_for(self, task: str) -> bool:
        """Is this SPEC's own interface (the function called as the probes hold the arguments)?"""
        return self in (Interface(), Interface(parameters=canonical_arguments(task)))


#: every key of an assignment.toml, with what it holds: the file's schema, checked before
#: anything runs (a typo'd key or a wrong value is an error naming it and what is allowed)
TOP_LEVEL_KEYS: dict[str, Any] = {
    "id": str, "kind": str, "course": str, "task": str, "function": str, "signature": str,
    "arguments": list, "summary": str, "conventions": list, "inference_priority": int,
    "rubric_from": str, "interface": dict, "canonical": dict, "parts": list,
}
#: the keys of a part of a multi-part assignment (``[[parts]]``)
PART_KEYS: dict[str, Any] = {"assignment": str, "weight": (int, float), "title": str}
INTERFACE_KEYS: dict[str, Any] = {
    "kind": str, "parameters": list, "mask": str, "returns": str, "arrays": str, "dtype": str,
    "projections": str, "batch": str, "mask_shape": str, "self_attention_only": bool,
    "constructor": dict, "weights": dict, "biases": list, "fused": (str, dict),
    "return_keys": list,
    "keywords": dict, "constants": dict, "none": list, "mask_always": bool, "method": str,
    "ndim": int, "axis": int, "globals": dict, "squeeze": int, "pairs": str,
    "factory": bool, "backward": dict, "gradients_from": dict, "saved_outputs": dict,
    "fixed": dict, "causal_square_only": bool, "equal_widths": list,
    "rope_tables": dict, "theta": (int, float), "min_ndim": int, "padding_row": int,
    "output_projection": bool, "one_head": bool, "axes": str, "tokens": dict,
    "constructor_constants": dict,
}
#: the keys of ``[interface.backward]``
BACKWARD_KEYS: dict[str, Any] = {"method": str, "parameters": list, "gradients": str}
#: how a backward's gradients come back, and the kinds of code each is for
GRADIENT_SOURCES = {"outputs": ("class",), "inputs": ("class",), "grad": ("autograd",)}
#: how an output is found among an autograd Function's saved tensors
SAVED_RULES = ("per-query",)
KINDS = ("builtin", "preset", "course")
TYPE_NAMES = {str: "a string", list: "a list", dict: "a table", bool: "true or false",
              int: "a whole number", (str, dict): "a string or a table",
              (int, float): "a number"}


def _check_keys(data: dict[str, Any], schema: dict[str, Any], where: str, table: str) -> None:
    import difflib

    for key, value in data.items():
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{where}: unknown key {key!r} in {table}{hint}; the keys are "
                             f"{', '.join(schema)}")
        wanted = schema[key]
        if not isinstance(value, wanted) or (wanted is int and isinstance(value, bool)):
            raise ValueError(f"{where}: {key} in {table} must be {TYPE_NAMES[wanted]}, not "
                             f"{value!r}")


def check_file(data: dict[str, Any], where: str) -> None:
    """The file against its schema: known keys, each of its type and, for a choice, an allowed
    value."""
    _check_keys(data, TOP_LEVEL_KEYS, where, "the file")
    if "parts" in data:
        _check_parts_file(data, where)
        return
    for key in ("id", "task", "function", "signature"):
        if key not in data:
            raise ValueError(f"{where}: the key {key!r} is missing")
    if data.get("kind", "builtin") not in KINDS:
        raise ValueError(f"{where}: kind = {data['kind']!r}; expected one of {', '.join(KINDS)}")
    _check_keys(dict(data.get("interface", {})), INTERFACE_KEYS, where, "[interface]")
    if "canonical" in data and data.get("kind", "builtin") != "builtin":
        raise ValueError(f"{where}: [canonical] defines a task; only a built-in assignment has "
                         "one (a course's assignment names its task and maps it in [interface])")


#: what a multi-part assignment says of itself; its parts say the rest
PARTS_FILE_KEYS = ("id", "kind", "course", "summary", "conventions", "parts")


def _check_parts_file(data: dict[str, Any], where: str) -> None:
    """A multi-part assignment: an ID, its parts (each an assignment, with a weight), and
    nothing that belongs to a part (a task, a function, an interface)."""
    if "id" not in data:
        raise ValueError(f"{where}: the key 'id' is missing")
    extra = [key for key in data if key not in PARTS_FILE_KEYS]
    if extra:
        raise ValueError(f"{where}: {', '.join(extra)} belong(s) to the parts of a multi-part "
                         f"assignment, not to the whole (its keys: {', '.join(PARTS_FILE_KEYS)})")
    if data.get("kind", "course") not in KINDS[1:]:
        raise ValueError(f"{where}: a multi-part assignment is a preset or a course's")
    parts = data["parts"]
    if not parts or not all(isinstance(part, dict) for part in parts):
        raise ValueError(f"{where}: parts is a list of tables ([[parts]]), at least one")
    for number, part in enumerate(parts, 1):
        _check_keys(part, PART_KEYS, where, f"part {number}")
        if "assignment" not in part:
            raise ValueError(f"{where}: part {number} names no assignment")
        weight = part.get("weight", 1.0)
        if isinstance(weight, bool) or not weight > 0:
            raise ValueError(f"{where}: part {number}: weight must be a number above 0")


def _check_task_options(canonical: Canonical, data: dict[str, Any], where: str) -> None:
    """The interface's options that only some tasks can honour, against what this task's
    canonical call says it can."""
    task = canonical.task
    batch = str(data.get("batch", "any"))
    if batch not in canonical.batch:
        hint = f"; {canonical.batch_hint}" if canonical.batch_hint else ""
        raise ValueError(f"{where}: batch = {batch!r} is not for the {task} task (it takes "
                         f"{', '.join(canonical.batch)}){hint}")
    if ("ndim" in data or "axis" in data) and not canonical.axis_options:
        takers = [c.task for c in canonical_calls().values() if c.axis_options]
        raise ValueError(f"{where}: ndim and axis are for the {', '.join(takers)} task")
    if data.get("ndim", 0) not in (0, 2) or data.get("axis", -1) not in (0, -1):
        raise ValueError(f"{where}: ndim is 0 (any) or 2 (a matrix), axis 0 or -1")
    _check_min_ndim(canonical, data, where)
    if "padding_row" in data and not (canonical.padding_row and data["padding_row"] >= 0):
        takers = [c.task for c in canonical_calls().values() if c.padding_row]
        raise ValueError(f"{where}: padding_row is the index (0 or more) of the row an encoding "
                         f"table zeroes for padding, for the {', '.join(takers)} task"
                         if not canonical.padding_row else
                         f"{where}: padding_row = {data['padding_row']!r} must be 0 or more")
    if not 0 <= int(data.get("squeeze", 0)) <= 3:
        raise ValueError(f"{where}: squeeze is the number of leading axes of length 1 (0 to 3)")
    takes_mask = "mask" in canonical.arguments
    for key in ("mask", "mask_shape", "mask_always"):
        if key in data and not (takes_mask or canonical.returns_mask and key == "mask"):
            raise ValueError(f"{where}: {key} is for tasks that take a mask"
                             + (" (the masks this task returns are read by `mask`)"
                                if canonical.returns_mask else "")
                             + f"; the {task} task takes none")
    if canonical.returns_mask and data.get("mask") in ("lengths", "none"):
        raise ValueError(f"{where}: mask = {data['mask']!r} says no mask; the {task} task "
                         "returns one: keep, block, float-keep, zero-blocks or additive")
    if data.get("pairs", "interleaved") != "interleaved" and not canonical.rotary_pairs:
        takers = [c.task for c in canonical_calls().values() if c.rotary_pairs]
        raise ValueError(f"{where}: pairs is for the {', '.join(takers)} tasks (rotary "
                         "position embeddings)")


def _check_min_ndim(canonical: Canonical, data: dict[str, Any], where: str) -> None:
    """``min_ndim`` (softmax code that takes at least a matrix): for a task with an axis, 2,
    and not with ``ndim = 2`` (a matrix exactly), which already says it."""
    if "min_ndim" not in data:
        return
    if not canonical.axis_options:
        takers = [c.task for c in canonical_calls().values() if c.axis_options]
        raise ValueError(f"{where}: min_ndim is for the {', '.join(takers)} task")
    if data["min_ndim"] != 2:
        raise ValueError(f"{where}: min_ndim = {data['min_ndim']!r}; it is 2 (the code takes "
                         "inputs of at least two axes)")
    if data.get("ndim", 0) == 2:
        raise ValueError(f"{where}: min_ndim and ndim = 2 together: ndim = 2 says a matrix "
                         "exactly (every input folded to one), min_ndim = 2 at least a matrix")


def _check_fixed_theta(canonical: Canonical, data: dict[str, Any], where: str) -> None:
    """``theta`` (the theta the course's code fixes) is for tasks that take one."""
    if "theta" in data and ("theta" not in canonical.arguments or isinstance(data["theta"], bool)
                            or data["theta"] <= 0):
        raise ValueError(f"{where}: theta is the positive theta the course's code fixes, for "
                         f"tasks that take one; the {canonical.task} task takes none"
                         if "theta" not in canonical.arguments else
                         f"{where}: theta = {data['theta']!r} must be above 0")


def _check_argument_name(name: str, known: tuple[str, ...], task: str, where: str) -> None:
    if name in known:
        return
    why = ""
    if name in DERIVED_ARGUMENTS:
        why = (f" ({name} is worked out from {', '.join(DERIVED_FROM[name])}, which the {task} "
               "task does not take)")
    raise ValueError(f"{where}: parameter {name!r} is not one of {', '.join(known)}{why}")


def _sources(pairs: Any) -> list[Any]:
    """The values of a constructor's table, at every depth (nanoGPT's `config` is a table)."""
    found: list[Any] = []
    for _, value in pairs:
        found.extend(_sources(value) if isinstance(value, tuple) else [value])
    return found


#: the depth of tables a constructor argument may nest (nanoGPT's `config` is one)
MAX_TABLE_DEPTH = 3


def _check_given_value(value: Any, known: tuple[str, ...], task: str, where: str, key: str,
                       tables: bool, depth: int = 0) -> None:
    """A constructor or global value: an argument's name, a number or true/false, or (in a
    constructor) a table of them, checked at every depth."""
    if isinstance(value, str):
        try:
            _check_argument_name(value, known, task, f"{where}: {key}")
        except ValueError as exc:
            hint = ("; a fixed string goes in constructor_constants (rope_tables.constants for "
                    "a table builder)")
            raise ValueError(f"{exc}{hint}") from None
    elif isinstance(value, dict) and tables and depth < MAX_TABLE_DEPTH:
        for inner, item in value.items():
            _check_given_value(item, known, task, where, f"{key}.{inner}", tables, depth + 1)
    elif not isinstance(value, (bool, int, float)):
        raise ValueError(f"{where}: {key} = {value!r} must be an argument's name or a number"
                         + (" (or a table of them)" if tables else ""))


def _check_constant(value: Any, where: str, key: str, dtype: str = "float64") -> None:
    """A fixed keyword argument: a string, a number, true/false, or a list of them; a device
    the grader has (the CPU) and a dtype the interface's own (``dtype``)."""
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, (str, bool, int, float)) for item in items):
        raise ValueError(f"{where}: {key} = {value!r} must be a string, a number, true/false "
                         "or a list of them")
    name = key.rsplit(".", 1)[-1]
    if name == "device" and value != "cpu":  # (a number is a GPU's index)
        raise ValueError(f"{where}: {key} = {value!r}: the grader runs the code on the CPU; "
                         "give device = \"cpu\"")
    if name == "dtype" and isinstance(value, str) and value != dtype:
        hint = (f" (or dtype = {value!r} under [interface], if the course computes in it)"
                if value in INTERFACE_CHOICES["dtype"] else "")
        raise ValueError(f"{where}: {key} = {value!r}: the interface's test inputs are {dtype}; "
                         f"give {dtype!r}{hint}")


def _check_tokens(canonical: Canonical, data: dict[str, Any], given: tuple[str, ...],
                  where: str) -> tuple[tuple[str, Any], ...]:
    """``[interface.tokens]``: the token tensor given for the length n, for code that builds
    a mask or an encoding from its shape; () when there is none."""
    if "tokens" not in data:
        return ()
    table = dict(data["tokens"])
    _check_keys(table, TOKEN_KEYS, where, "[interface.tokens]")
    if "tokens" not in given:
        raise ValueError(f"{where}: [interface.tokens] describes the token tensor the code "
                         "takes for its length: give `tokens` to a parameter")
    if table.get("dtype", "int64") not in TOKEN_DTYPES:
        raise ValueError(f"{where}: tokens.dtype = {table['dtype']!r}; expected one of "
                         f"{', '.join(TOKEN_DTYPES)}")
    if not 1 <= int(table.get("batch", 2)) <= MAX_TOKEN_BATCH:
        raise ValueError(f"{where}: tokens.batch = {table['batch']!r}: the rows of the token "
                         f"tensor, 1 to {MAX_TOKEN_BATCH}")
    if table.get("features") and "d_model" not in canonical.arguments:
        raise ValueError(f"{where}: tokens.features gives a (B, n, d_model) tensor; the "
                         f"{canonical.task} task has no d_model")
    return tuple((str(k), v) for k, v in table.items())


def _check_axes(canonical: Canonical, data: dict[str, Any], where: str) -> str:
    """``axes``: RoPE's input layout, for the task that rotates its input; the same as
    ``rope_tables.axes`` where both are given."""
    axes = str(data.get("axes", "any"))
    if "axes" in data and canonical.rotary_pairs != "input":
        takers = [c.task for c in canonical_calls().values() if c.rotary_pairs == "input"]
        raise ValueError(f"{where}: axes is for the {', '.join(takers)} task (the layout of "
                         "the input RoPE rotates)")
    two_step = dict(data.get("rope_tables", {})).get("axes")
    if "axes" in data and two_step is not None and two_step != axes:
        raise ValueError(f"{where}: axes = {axes!r} and rope_tables.axes = {two_step!r} "
                         "disagree; give one of them")
    return axes


def _constructor_constants(data: dict[str, Any], kind: str,
                           where: str) -> tuple[tuple[str, Any], ...]:
    """``constructor_constants``: a class's constructor keywords with a fixed value."""
    table = dict(data.get("constructor_constants", {}))
    if table and kind != "class":
        raise ValueError(f"{where}: constructor_constants is for kind = \"class\" (a "
                         "function's fixed keywords are `constants`)")
    clash = sorted(set(table) & set(dict(data.get("constructor", {}))))
    if clash:
        raise ValueError(f"{where}: constructor_constants.{clash[0]} is also in constructor; "
                         "give it once")
    for key, value in table.items():
        _check_constant(value, where, f"constructor_constants.{key}",
                        str(data.get("dtype", "float64")))
    return tuple((str(k), _frozen(v)) for k, v in table.items())


def _interface(task: str, data: dict[str, Any], where: str) -> Interface:
    try:
        canonical = canonical_call(task)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    _check_keys(data, INTERFACE_KEYS, where, "[interface]")
    known_args = (*canonical.arguments, *derivable(canonical.arguments))
    _check_fixed_theta(canonical, data, where)
    tables = check_rope_tables(canonical, data, known_args, where)
    parameters = tuple(str(p) for p in data.get("parameters", canonical.arguments))
    known_args = (*known_args, *table_names(tables))
    keywords = {str(k): str(v) for k, v in dict(data.get("keywords", {})).items()}
    for name in (*parameters, *keywords.values()):
        _check_argument_name(name, known_args, task, where)
    for table in ("constructor", "globals"):
        for key, value in dict(data.get(table, {})).items():
            _check_given_value(value, known_args, task, where, f"{table}.{key}",
                               tables=table == "constructor")
    for key, value in dict(data.get("constants", {})).items():
        _check_constant(value, where, f"constants.{key}", str(data.get("dtype", "float64")))
    sources = (*parameters, *keywords.values(),
               *_sources(_frozen(dict(data.get("constructor", {})))))
    token_table = _check_tokens(canonical, data, tuple(map(str, sources)), where)
    axes = _check_axes(canonical, data, where)
    for path, source in dict(data.get("weights", {})).items():
        unknown = [w for w in str(source).split("|") if w not in canonical.arguments]
        if unknown or not isinstance(source, str):
            raise ValueError(f"{where}: weights.{path} = {source!r}: each part must be one of "
                             f"the task's arguments ({', '.join(canonical.arguments)}), "
                             "fused ones joined by |")
    fused = data.get("fused", "blocks")
    layouts = dict(fused) if isinstance(fused, dict) else {}
    for key, choices in INTERFACE_CHOICES.items():
        given = [data[key]] if key in data and not isinstance(data[key], dict) else []
        if key == "fused":
            given += list(layouts.values())
        for value in given:
            if value not in choices:
                raise ValueError(f"{where}: {key} = {value!r}; expected one of "
                                 f"{', '.join(choices)}")
    kind = str(data.get("kind", "function"))
    _check_task_options(canonical, data, where)
    _check_heads_options(canonical, data, kind, parameters, keywords, where)
    if data.get("method") and kind != "class":
        raise ValueError(f"{where}: method is for kind = \"class\"")
    stateful = _stateful_options(canonical, data, kind, parameters, known_args, where)
    keys = data.get("return_keys", ())
    outputs = canonical.outputs
    if data.get("returns") == "dict" and not (
            isinstance(keys, list) and 1 <= len(keys) <= len(outputs)
            and all(isinstance(k, str) for k in keys)):
        raise ValueError(f"{where}: returns = \"dict\" needs return_keys: the dict's key of "
                         f"each of {', '.join(outputs)}, in that order (the first at least)")
    return Interface(
        kind=kind, parameters=parameters, mask=str(data.get("mask", "keep")),
        returns=str(data.get("returns", "output")), arrays=str(data.get("arrays", "numpy")),
        dtype=str(data.get("dtype", "float64")), projections=str(data.get("projections", "x@W")),
        batch=str(data.get("batch", "any")), mask_shape=str(data.get("mask_shape", "full")),
        self_attention_only=bool(data.get("self_attention_only", False)),
        # a table is an object with those attributes (nanoGPT's `config`)
        constructor=tuple((str(k), tuple((str(a), b) for a, b in v.items())
                           if isinstance(v, dict) else v)
                          for k, v in dict(data.get("constructor", {})).items()),
        weights=tuple((str(k), str(v)) for k, v in dict(data.get("weights", {})).items()),
        biases=tuple(str(b) for b in data.get("biases", ())),
        fused="blocks" if layouts else str(fused),
        fused_by_path=tuple((str(k), str(v)) for k, v in layouts.items()),
        return_keys=tuple(str(k) for k in keys),
        keywords=tuple(keywords.items()),
        constants=tuple((str(k), v) for k, v in dict(data.get("constants", {})).items()),
        none=tuple(str(n) for n in data.get("none", ())),
        mask_always=bool(data.get("mask_always", False)),
        method=str(data.get("method", "")),
        ndim=int(data.get("ndim", 0)),
        axis=int(data["axis"]) if "axis" in data else None,
        min_ndim=int(data.get("min_ndim", 0)),
        padding_row=int(data["padding_row"]) if "padding_row" in data else None,
        globals=tuple((str(k), v) for k, v in dict(data.get("globals", {})).items()),
        squeeze=int(data.get("squeeze", 0)),
        pairs=str(data.get("pairs", "interleaved")),
        **stateful,
        rope_tables=tables,
        theta=float(data["theta"]) if "theta" in data else None,
        output_projection=bool(data.get("output_projection", True)),
        one_head=bool(data.get("one_head", False)),
        axes=axes, tokens=token_table,
        constructor_constants=_constructor_constants(data, kind, where),
    )


def _check_heads_options(canonical: Canonical, data: dict[str, Any], kind: str,
                         parameters: tuple[str, ...], keywords: dict[str, str],
                         where: str) -> None:
    """``output_projection = false`` and ``one_head``: for the forward tasks that take W_o and
    num_heads; the code then receives no W_o (it is the identity), and a class that is one head
    has one module's weights (no ``{h}``) and returns its output alone."""
    one_head = bool(data.get("one_head", False))
    if "output_projection" not in data and not one_head:
        return
    task = canonical.task
    takers = [c.task for c in canonical_calls().values() if _takes_output_projection(c)]
    if not _takes_output_projection(canonical):
        key = "one_head" if one_head else "output_projection"
        raise ValueError(f"{where}: {key} is for the tasks with an output projection W_o and "
                         f"heads ({', '.join(takers)}); the {task} task is not one")
    if one_head and kind != "class":
        raise ValueError(f"{where}: one_head is for kind = \"class\" (the class is built once "
                         "per head)")
    if one_head and data.get("output_projection", False):
        raise ValueError(f"{where}: one_head: a class that is one head holds no output "
                         "projection; leave output_projection out (or false)")
    weights = dict(data.get("weights", {}))
    given_w_o = [name for name in (*parameters, *keywords.values(),
                                   *_sources(dict(data.get("constructor", {})).items()))
                 if name == "W_o"] + [path for path, source in weights.items()
                                      if "W_o" in str(source).split("|")]
    if given_w_o:
        raise ValueError(f"{where}: the code has no output projection (W_o is the identity), "
                         f"so nothing receives W_o: {', '.join(given_w_o)}")
    if not one_head:
        return
    if data.get("returns", "output") != "output":
        raise ValueError(f"{where}: one_head: a head returns its output alone (returns = "
                         "\"output\")")
    per_head = [path for path in weights if "{h}" in path]
    if per_head:
        raise ValueError(f"{where}: one_head: each head is its own object and gets its own "
                         f"slice of every weight; {', '.join(per_head)} needs no {{h}}")


def _takes_output_projection(canonical: Canonical) -> bool:
    """A forward task whose output goes through W_o after its heads."""
    return {"W_o", "num_heads"} <= set(canonical.arguments) and \
        "grad_output" not in canonical.arguments


def _stateful_options(canonical: Canonical, data: dict[str, Any], kind: str,
                      parameters: tuple[str, ...], known: tuple[str, ...], where: str
                      ) -> dict[str, Any]:
    """The options of code called in steps: a factory, a backward after the forward, outputs
    read from attributes or saved tensors, arguments fixed inside; checked against the task and
    the kind of code, each refused by name."""
    task = canonical.task
    if data.get("factory") and kind == "function":
        raise ValueError(f"{where}: factory is for kind = \"class\" or \"autograd\" (the "
                         "function named returns the class)")
    if kind == "autograd":
        for key in ("constructor", "weights", "biases", "globals", "method"):
            if key in data:
                raise ValueError(f"{where}: {key} is not for kind = \"autograd\" (a "
                                 "torch.autograd.Function is called through .apply, never built)")
        if data.get("arrays", "numpy") != "torch":
            raise ValueError(f"{where}: kind = \"autograd\" needs arrays = \"torch\"")
    backward = _backward_options(canonical, dict(data.get("backward", {})), kind, known, where)
    outputs = canonical.outputs
    gradients_from = {str(k): v for k, v in dict(data.get("gradients_from", {})).items()}
    saved = {str(k): v for k, v in dict(data.get("saved_outputs", {})).items()}
    for table, given in (("gradients_from", gradients_from), ("saved_outputs", saved)):
        for name, value in given.items():
            if name not in outputs:
                raise ValueError(f"{where}: {table}.{name}: {name} is not one of the {task} "
                                 f"task's outputs ({', '.join(outputs)})")
            if not isinstance(value, str) or not value:
                raise ValueError(f"{where}: {table}.{name} = {value!r} must be a string")
    if gradients_from and kind != "class" or gradients_from and not backward:
        raise ValueError(f"{where}: gradients_from reads attributes of a class's object after "
                         "its backward: it needs kind = \"class\" and [interface.backward]")
    for name, rule in saved.items():
        if kind != "autograd" or rule not in SAVED_RULES:
            raise ValueError(f"{where}: saved_outputs.{name} = {rule!r}: saved tensors are an "
                             f"autograd Function's, found by {', '.join(SAVED_RULES)}")
    if backward.get("gradients") in ("inputs", "grad"):
        _check_gradient_names(outputs, parameters, gradients_from, where)
    fixed = _fixed_arguments(canonical, dict(data.get("fixed", {})), parameters, data, where)
    if data.get("causal_square_only") and "causal" not in canonical.arguments:
        raise ValueError(f"{where}: causal_square_only is for tasks with a causal argument; "
                         f"the {task} task has none")
    widths = tuple(str(w) for w in data.get("equal_widths", ()))
    if widths and (len(widths) < 2 or any(w not in canonical.sequences for w in widths)):
        raise ValueError(f"{where}: equal_widths names two or more of the {task} task's "
                         f"sequences ({', '.join(canonical.sequences) or 'none'})")
    return {"factory": bool(data.get("factory", False)), **backward, "equal_widths": widths,
            "gradients_from": tuple(gradients_from.items()),
            "saved_outputs": tuple(saved.items()), "fixed": fixed,
            "causal_square_only": bool(data.get("causal_square_only", False))}


def _backward_options(canonical: Canonical, table: dict[str, Any], kind: str,
                      known: tuple[str, ...], where: str) -> dict[str, Any]:
    """``[interface.backward]``: the method (a class's), its arguments and how the gradients
    come back; only for a task graded on gradients (it takes ``grad_output``)."""
    if not table:
        return {}
    _check_keys(table, BACKWARD_KEYS, where, "[interface.backward]")
    takers = [c.task for c in canonical_calls().values() if "grad_output" in c.arguments]
    if "grad_output" not in canonical.arguments:
        raise ValueError(f"{where}: [interface.backward] is for the tasks graded on gradients "
                         f"({', '.join(takers)}); the {canonical.task} task is not")
    if kind == "function":
        raise ValueError(f"{where}: [interface.backward] is for kind = \"class\" (a method "
                         "after the forward) or \"autograd\" (.backward of the output)")
    gradients = str(table.get("gradients", "grad" if kind == "autograd" else "outputs"))
    if kind not in GRADIENT_SOURCES.get(gradients, (kind,)) or gradients not in GRADIENT_SOURCES:
        fitting = [g for g, kinds in GRADIENT_SOURCES.items() if kind in kinds]
        raise ValueError(f"{where}: backward.gradients = {gradients!r}; for kind = {kind!r} "
                         f"one of {', '.join(fitting)}")
    if "method" in table and kind == "autograd":
        raise ValueError(f"{where}: backward.method is a class's; an autograd Function's "
                         "backward runs through the output's .backward(...)")
    arguments = tuple(str(a) for a in table.get("parameters", ["grad_output"]))
    for name in arguments:
        _check_argument_name(name, known, canonical.task, f"{where}: backward.parameters")
    if kind == "autograd" and arguments != ("grad_output",):
        raise ValueError(f"{where}: an autograd Function's output takes one upstream gradient: "
                         "backward.parameters = [\"grad_output\"]")
    return {"backward_method": str(table.get("method", "backward")) if kind == "class" else "",
            "backward_parameters": arguments, "gradients": gradients}


def _check_gradient_names(outputs: tuple[str, ...], parameters: tuple[str, ...],
                          given: dict[str, Any], where: str) -> None:
    """Gradients of the forward's inputs are named d<argument> (dQ, dX_kv): each output not
    read from an attribute must be the gradient of an argument the forward receives."""
    for name in outputs:
        if name not in given and name[1:] not in parameters:
            raise ValueError(f"{where}: the output {name} is neither the gradient of an argument "
                             f"the forward receives ({', '.join(parameters)}) nor read from an "
                             "attribute (gradients_from)")


def _fixed_arguments(canonical: Canonical, table: dict[str, Any], parameters: tuple[str, ...],
                     data: dict[str, Any], where: str) -> tuple[tuple[str, Any], ...]:
    """Arguments the course's code fixes inside: optional ones of the task, never given."""
    given_by_name = set(dict(data.get("keywords", {})).values())
    for name, value in table.items():
        if name not in dict(canonical.defaults):
            settable = ", ".join(dict(canonical.defaults)) or "none"
            raise ValueError(f"{where}: fixed.{name}: only arguments with a default can be "
                             f"fixed (the {canonical.task} task's: {settable})")
        if name in parameters or name in given_by_name:
            raise ValueError(f"{where}: fixed.{name}: the interface also gives {name} to the "
                             "code; an argument fixed inside is not given")
        if isinstance(value, (dict, list)) or not isinstance(value, (bool, int, float)):
            raise ValueError(f"{where}: fixed.{name} = {value!r} must be a number or true/false")
    return tuple((str(k), v) for k, v in table.items())


@dataclass(frozen=True)
class AssignmentInfo:
    """What an assignment asks for, as plain data."""

    id: str
    #: the canonical computation it is graded on: "softmax", "attention", "multi_head_attention"
    task: str
    function: str
    signature: str
    arg_names: tuple[str, ...]
    summary: str
    #: what the student must know to write it, one bullet per convention
    conventions: tuple[str, ...]
    #: when a submission defines several assignments' functions, the highest is graded
    inference_priority: int
    folder: Any  # a Path, or an importlib Traversable inside an installed wheel
    interface: Interface = Interface()
    #: "builtin" (SPEC's own assignments) or "preset" (a course's interface, shipped ready)
    kind: str = "builtin"
    #: where a preset comes from (the course and its starter code)
    course: str = ""
    #: the assignment whose rubric applies when the folder has none (a preset's task's)
    rubric_from: str = ""
    #: a multi-part assignment: its parts, in order (its own task, function and interface are
    #: empty; each part has its own)
    parts: tuple[PartInfo, ...] = ()

    @property
    def multi_part(self) -> bool:
        return bool(self.parts)


@dataclass(frozen=True)
class PartInfo:
    """A part of a multi-part assignment: an assignment ID or folder (relative to the whole's
    folder), and the points it is worth (None: its own rubric's)."""

    assignment: str
    weight: float | None = None
    title: str = ""


def _builtin_root() -> Any:
    if _SOURCE_TREE.is_dir():  # a source checkout or an editable install
        return _SOURCE_TREE
    return resources.files("grader._assignments")  # a wheel carries assignments/ as package data


def _read(folder: Any) -> AssignmentInfo:
    where = f"{folder}/{INTERFACE_FILE}"
    try:
        data = tomllib.loads((folder / INTERFACE_FILE).read_text(encoding="utf-8"))
        check_file(data, where)
        if "parts" in data:
            return _read_parts(folder, data)
        task = str(data["task"])
        interface = _interface(task, dict(data.get("interface", {})), where)
        parameters = interface.parameters or canonical_arguments(task)
        return AssignmentInfo(
            id=str(data["id"]),
            task=task,
            function=str(data["function"]),
            signature=str(data["signature"]),
            arg_names=tuple(str(a) for a in data.get("arguments", parameters)),
            summary=str(data.get("summary", "")),
            conventions=tuple(str(c) for c in data.get("conventions", ())),
            inference_priority=int(data.get("inference_priority", 0)),
            folder=folder,
            interface=interface,
            kind=str(data.get("kind", "builtin")),
            course=str(data.get("course", "")),
            rubric_from=str(data.get("rubric_from", "")),
        )
    except (KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{where} is not a valid assignment: {exc}") from exc


def _read_parts(folder: Any, data: dict[str, Any]) -> AssignmentInfo:
    parts = tuple(PartInfo(str(part["assignment"]),
                           float(part["weight"]) if "weight" in part else None,
                           str(part.get("title", ""))) for part in data["parts"])
    return AssignmentInfo(
        id=str(data["id"]), task="", function="",
        signature="parts: " + ", ".join(part.assignment for part in parts), arg_names=(),
        summary=str(data.get("summary", "")),
        conventions=tuple(str(c) for c in data.get("conventions", ())),
        inference_priority=0, folder=folder, kind=str(data.get("kind", "course")),
        course=str(data.get("course", "")), parts=parts)


def parts_of(info: AssignmentInfo) -> tuple[tuple[AssignmentInfo, PartInfo], ...]:
    """The parts of a multi-part assignment, each resolved (a shipped ID, or a folder written
    as a path, relative to the whole's: ``./rope``, ``../attention``); ``ValueError`` naming a
    part that is unknown or itself made of parts."""
    resolved = []
    for number, part in enumerate(info.parts, 1):
        # (as everywhere: a part written as a path is a folder, relative to the whole's; a
        # bare name a shipped assignment)
        nearby = Path(str(info.folder)) / Path(part.assignment).expanduser()
        if written_as_path(part.assignment) and is_folder(str(nearby)):
            found = _from_folder(str(nearby.resolve()))
        elif not written_as_path(part.assignment) and part.assignment in shipped():
            found = shipped()[part.assignment]
        else:
            raise ValueError(f"{info.folder}/{INTERFACE_FILE}: part {number}: "
                             + unknown_assignment(part.assignment))
        if found.multi_part:
            raise ValueError(f"{info.folder}/{INTERFACE_FILE}: part {number} ({found.id}) is "
                             "itself made of parts; list its parts instead")
        resolved.append((found, part))
    return tuple(resolved)


@cache
def shipped() -> dict[str, AssignmentInfo]:
    """The assignments that ship: built-ins first (most advanced first: the inference order),
    then the course presets."""
    root = _builtin_root()
    found = [_read(child) for child in root.iterdir()
             if child.is_dir() and (child / INTERFACE_FILE).is_file()]
    found.sort(key=lambda info: (info.kind != "builtin", -info.inference_priority, info.id))
    return {info.id: info for info in found}


def builtins() -> dict[str, AssignmentInfo]:
    return {k: v for k, v in shipped().items() if v.kind == "builtin"}


def ids() -> tuple[str, ...]:
    """Every shipped assignment's ID (built-ins and presets)."""
    return tuple(sorted(shipped()))


def one_part_ids() -> tuple[str, ...]:
    """The shipped assignments of one function each (not made of parts)."""
    return tuple(i for i in ids() if not shipped()[i].multi_part)


@cache
def _from_folder(path: str) -> AssignmentInfo:
    info = _read(Path(path))
    if info.multi_part:
        parts_of(info)  # every part resolves, before anything runs
    return info


def written_as_path(reference: str) -> bool:
    """Whether ``reference`` is written as a path: a separator in it, or ``.`` or ``~`` first.
    Such a reference names a folder, never a shipped assignment (no shipped ID has one), so a
    course's ``my-course/attention`` is never taken for the built-in ``attention``."""
    return "/" in reference or os.sep in reference or reference.startswith((".", "~"))


def is_folder(reference: str) -> bool:
    return (Path(reference).expanduser() / INTERFACE_FILE).is_file()


def get(reference: str) -> AssignmentInfo:
    """The assignment ``reference`` names: written as a path, the course's folder there; a bare
    name, the shipped assignment with that ID, else a folder of that name in the working
    directory. ``KeyError`` naming the known IDs when there is none."""
    known = shipped()
    if not written_as_path(reference) and reference in known:
        return known[reference]
    if is_folder(reference):
        return _from_folder(str(Path(reference).expanduser().resolve()))
    raise KeyError(unknown_assignment(reference))


def is_shipped(info: AssignmentInfo) -> bool:
    """Whether ``info`` is a shipped assignment (its ID names it), not a course's folder (which
    only its path names: its ID may be a shipped one's)."""
    return shipped().get(info.id) is info


def reference_of(info: AssignmentInfo) -> str:
    """What names ``info`` again for ``get``: its ID if it ships, else its folder's path."""
    return info.id if is_shipped(info) else str(info.folder)


def unknown_assignment(reference: str) -> str:
    """What every entry point says of an assignment that is neither shipped nor a course's
    folder: the closest known ID, if one is close, and every choice."""
    import difflib

    close = difflib.get_close_matches(reference, ids(), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (f"unknown assignment {reference!r}{hint} (known: {', '.join(ids())}; or the path of "
            f"a folder holding an {INTERFACE_FILE})")


def exists(reference: str) -> bool:
    return (not written_as_path(reference) and reference in shipped()) or is_folder(reference)


def inference_order() -> tuple[AssignmentInfo, ...]:
    """The assignments a submission is matched against when none is named: the built-ins."""
    return tuple(builtins().values())


def offered(defined: Any) -> str | None:
    """A shipped multi-part assignment that a submission defining ``defined`` looks written
    for (the functions of at least two of its parts), to suggest when none was named."""
    names = set(defined)
    for info in shipped().values():
        if info.multi_part:
            functions = [found.function for found, _ in parts_of(info)]
            if sum(function in names for function in functions) >= 2:
                return info.id
    return None


def functions() -> dict[str, str]:
    """Assignment ID -> the function it asks for, in inference order."""
    return {info.id: info.function for info in inference_order()}


def infer(defined: Any) -> str | None:
    """The most advanced assignment whose function is among the names ``defined``."""
    names = set(defined)
    return next((info.id for info in inference_order() if info.function in names), None)


def rubric(reference: str) -> dict[str, Any]:
    """The points of each check of the assignment with this ID or in this folder."""
    return rubric_of(get(reference))


def part_max_score(found: AssignmentInfo, part: PartInfo) -> float:
    """The points a part is worth: its weight, else its own rubric's maximum."""
    return float(part.weight) if part.weight is not None else \
        float(rubric_of(found)["max_score"])


@cache
def rubric_of(info: AssignmentInfo) -> dict[str, Any]:
    """The points of each check, from the assignment's ``rubric.json`` (or, for a course folder
    without one, from the built-in assignment of its task)."""
    if info.multi_part:
        return {"assignment": info.id, "checks": [],
                "max_score": sum(part_max_score(found, part) for found, part in parts_of(info))}
    own = info.folder / RUBRIC_FILE
    source = own if own.is_file() else get(info.rubric_from or info.task).folder / RUBRIC_FILE
    data = dict(json.loads(source.read_text(encoding="utf-8")))
    data["assignment"] = info.id
    return data


# RoPE in two steps: "build the tables, then apply them" (Llama's precompute_freqs_cis and
# apply_rotary_emb, Hugging Face's rotary embedding and apply_rotary_pos_emb, XCS224N's
# precompute_rotary_emb and apply_rotary_emb). The assignment's function is the applier; the
# `[interface.rope_tables]` table names the builder and how its tables reach the applier. The
# child carries it out (``grader/sandbox/rope_tables.py``).

#: the keys of `[interface.rope_tables]`, with what each holds
ROPE_TABLE_KEYS: dict[str, Any] = {
    "builder": str, "arguments": list, "keywords": dict, "constructor": dict, "layout": str,
    "rows": str, "axes": str, "read": str, "signature": str, "constants": dict,
}
ROPE_TABLE_CHOICES = {
    # what the builder returns: one complex table (positions, d/2) as Llama's freqs_cis; one
    # real table (positions, d/2, 2) of cos and sin as XCS224N's rope_cache; cos and sin;
    # one real table of the angles (positions, d), as lucidrains' RotaryEmbedding returns
    "layout": ("complex", "stacked", "cos-sin", "angles"),
    # the rows the applier gets: those at the probe's positions (Llama's freqs_cis[start:end]),
    # a table longer than the sequence that the applier cuts to it (XCS224N's rope_cache[:T];
    # row t is the t-th token's position's: the whole table for positions 0 .. n-1), or the
    # builder's own (it takes the positions, as Hugging Face's rotary embedding position_ids)
    "rows": ("positions", "all", "given"),
    # the axes of the applier's input: (..., n, d) as they come, (B, h, n, d), (B, n, h, d)
    "axes": ("any", "bhnd", "bnhd"),
    # what the applier returns: the rotated input, or (queries, keys) of which one is read
    "read": ("output", "queries", "keys"),
}
#: the names the applier's parameters give the builder's tables, by layout
TABLE_NAMES = {"complex": ("rope_table",), "stacked": ("rope_table",),
               "angles": ("rope_table",),
               "cos-sin": ("rope_cos", "rope_sin")}


def table_names(tables: tuple[tuple[str, Any], ...]) -> tuple[str, ...]:
    """The names under which the builder's tables reach the applier (none without a builder)."""
    layout = dict(tables).get("layout")
    return TABLE_NAMES[str(layout)] if tables else ()


def rope_tables_dict(tables: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """`[interface.rope_tables]` as the child reads it (tables of pairs made dicts again)."""
    def plain(value: Any) -> Any:
        if isinstance(value, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
            return {str(k): plain(v) for k, v in value}
        return list(value) if isinstance(value, tuple) else value
    return {key: plain(value) for key, value in tables}


def rope_table_sources(tables: tuple[tuple[str, Any], ...]) -> list[Any]:
    """The canonical or derived arguments the builder receives (and "positions" where the
    grader picks the table's rows at the probe's positions itself)."""
    given = dict(tables)
    found = [*given.get("arguments", ()), *(v for _, v in given.get("keywords", ())),
             *_sources(given.get("constructor", ()))]
    return [*found, "positions"] if given.get("rows") in ("positions", "all") else found


def _frozen(value: Any) -> Any:
    """A TOML value as hashable data: tables become tuples of pairs, lists tuples."""
    if isinstance(value, dict):
        return tuple((str(k), _frozen(v)) for k, v in value.items())
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def check_rope_tables(canonical: Canonical, data: dict[str, Any], known: tuple[str, ...],
                      where: str) -> tuple[tuple[str, Any], ...]:
    """`[interface.rope_tables]` checked (every key known, of its type, each choice allowed,
    each argument one the task can give) and frozen; () when there is none."""
    if "rope_tables" not in data:
        return ()
    table = dict(data["rope_tables"])
    if canonical.rotary_pairs != "input":
        takers = [c.task for c in canonical_calls().values() if c.rotary_pairs == "input"]
        raise ValueError(f"{where}: rope_tables is for the {', '.join(takers)} task (RoPE "
                         "applied to its input)")
    _check_keys(table, ROPE_TABLE_KEYS, where, "[interface.rope_tables]")
    if not table.get("builder"):
        raise ValueError(f"{where}: [interface.rope_tables] needs builder: the name of the "
                         "function (or class) that builds the tables")
    for key, choices in ROPE_TABLE_CHOICES.items():
        if key in table and table[key] not in choices:
            raise ValueError(f"{where}: rope_tables.{key} = {table[key]!r}; expected one of "
                             f"{', '.join(choices)}")
    table.setdefault("layout", "complex")
    builder_known = (*known, "x")
    for value in table.get("arguments", ()):
        _check_given_value(value, builder_known, canonical.task, where,
                           "rope_tables.arguments", tables=False)
    for key, value in dict(table.get("keywords", {})).items():
        _check_given_value(value, builder_known, canonical.task, where,
                           f"rope_tables.keywords.{key}", tables=False)
    for key, value in dict(table.get("constructor", {})).items():
        _check_given_value(value, builder_known, canonical.task, where,
                           f"rope_tables.constructor.{key}", tables=True)
    for key, value in dict(table.get("constants", {})).items():
        _check_constant(value, where, f"rope_tables.constants.{key}",
                        str(data.get("dtype", "float64")))
        if key in dict(table.get("keywords", {})) or key in dict(table.get("constructor", {})):
            raise ValueError(f"{where}: rope_tables.constants.{key} is also given to the "
                             "builder by keywords or constructor; give it once")
    _check_reads_pair(table, data, canonical, where)
    return tuple((str(k), _frozen(v)) for k, v in table.items())


def _check_reads_pair(table: dict[str, Any], data: dict[str, Any], canonical: Canonical,
                      where: str) -> None:
    """Queries and keys rotated together: the rotated input goes to both."""
    if table.get("read", "output") == "output":
        return
    rotated = canonical.sequences[0]
    given = [*data.get("parameters", ()), *dict(data.get("keywords", {})).values()]
    if given.count(rotated) < 2:
        raise ValueError(f"{where}: rope_tables.read = {table['read']!r} reads one of the "
                         f"queries and keys the applier returns: give it {rotated} as both (list "
                         f"{rotated} twice in parameters)")
