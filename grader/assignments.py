"""The assignments the grader knows: function name, signature, reference and variant pipeline.

Adding an assignment = a reference implementation, a variant pipeline in ``reference.variants``,
a probe builder in ``grader.probes``, concept checks, a rubric under ``assignments/<id>/`` and an
entry here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import reference
from grader.model import FUNCTIONS, INFERENCE_ORDER, Array
from reference import variants

Outputs = tuple[Array, "Array | None"]


@dataclass(frozen=True)
class Assignment:
    id: str
    function: str
    signature: str
    arg_names: tuple[str, ...]
    reference: Callable[..., Outputs]
    variant: Callable[..., Outputs]
    summary: str
    #: what the student must know to write it (SPEC section 1), one bullet per convention;
    #: the starter kit's README and stub docstring are made from these
    conventions: tuple[str, ...] = ()


def _softmax_reference(x: Array, axis: int = -1) -> Outputs:
    return reference.softmax(x, axis), None


def _softmax_variant(recipe: Mapping[str, str], x: Array, axis: int = -1) -> Outputs:
    return variants.softmax(recipe, x, axis), None


def _mha_reference(*args: Any) -> Outputs:
    return reference.multi_head_attention(*args), None


ASSIGNMENTS: dict[str, Assignment] = {
    "softmax": Assignment(
        "softmax",
        FUNCTIONS["softmax"],
        "softmax(x, axis=-1)",
        ("x", "axis"),
        _softmax_reference,
        _softmax_variant,
        "A numerically stable softmax along any axis.",
        (
            "`x` is an array of any shape; return an array of the same shape.",
            "Every slice along `axis` (default: the last axis) is a probability distribution: "
            "non-negative entries that sum to 1.",
            "Numerically stable: inputs of magnitude 1e4 must give finite results.",
            "Do not modify `x` in place.",
        ),
    ),
    "attention": Assignment(
        "attention",
        FUNCTIONS["attention"],
        "scaled_dot_product_attention(Q, K, V, mask=None)",
        ("Q", "K", "V", "mask"),
        reference.scaled_dot_product_attention,
        variants.attention,
        "Scaled dot-product attention with an optional boolean mask (True = may attend).",
        (
            "`Q` has shape (..., n, d_k), `K` (..., m, d_k), `V` (..., m, d_v): n != m and "
            "d_k != d_v in general, and leading batch/head dimensions must work.",
            "Scores are Q K^T / sqrt(d_k); the softmax runs over the keys (the last axis).",
            "`mask` is None or a boolean array broadcastable to (..., n, m); True means the query "
            "may attend to that key. Masked keys get zero weight.",
            "Return the output (..., n, d_v), or a tuple (output, weights) with the weights "
            "(..., n, m).",
            "Do not modify the inputs in place.",
        ),
    ),
    "multi_head_attention": Assignment(
        "multi_head_attention",
        FUNCTIONS["multi_head_attention"],
        "multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None)",
        ("X_q", "X_kv", "W_q", "W_k", "W_v", "W_o", "num_heads", "mask"),
        _mha_reference,
        variants.multi_head_attention,
        "Multi-head attention: project, split into heads, attend per head, merge, project.",
        (
            "`X_q` has shape (..., n, d_model), `X_kv` (..., m, d_model); self-attention passes "
            "the same array twice.",
            "`W_q, W_k, W_v, W_o` are (d_model, d_model) and multiply on the right: "
            "`Q = X_q @ W_q`, `K = X_kv @ W_k`, `V = X_kv @ W_v`.",
            "`d_k = d_model // num_heads`; head h uses features [h*d_k:(h+1)*d_k] "
            "(reshape to (..., n, num_heads, d_k), then move the head axis before n).",
            "Each head is scaled dot-product attention with its own 1/sqrt(d_k); `mask` "
            "(True = may attend, broadcastable to (..., n, m)) is shared by every head.",
            "Concatenate the heads in order back to (..., n, d_model), then multiply by `W_o`.",
            "Return (..., n, d_model), or a tuple whose first item is that. Do not modify the "
            "inputs in place.",
        ),
    ),
}

__all__ = ["ASSIGNMENTS", "INFERENCE_ORDER", "Assignment", "Outputs", "rubric"]


_SOURCE_TREE = Path(__file__).resolve().parents[1] / "assignments"


@cache
def rubric(assignment: str) -> dict[str, Any]:
    """The points of each check, from ``assignments/<id>/rubric.json`` (installed as package data
    ``grader._assignments``)."""
    in_tree = _SOURCE_TREE / assignment / "rubric.json"
    if in_tree.is_file():  # a source checkout or editable install
        text = in_tree.read_text()
    else:  # an installed wheel carries assignments/ as package data
        text = (resources.files("grader._assignments") / assignment / "rubric.json").read_text()
    return dict(json.loads(text))
