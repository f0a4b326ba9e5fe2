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
    ),
    "attention": Assignment(
        "attention",
        FUNCTIONS["attention"],
        "scaled_dot_product_attention(Q, K, V, mask=None)",
        ("Q", "K", "V", "mask"),
        reference.scaled_dot_product_attention,
        variants.attention,
        "Scaled dot-product attention with an optional boolean mask (True = may attend).",
    ),
    "multi_head_attention": Assignment(
        "multi_head_attention",
        FUNCTIONS["multi_head_attention"],
        "multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None)",
        ("X_q", "X_kv", "W_q", "W_k", "W_v", "W_o", "num_heads", "mask"),
        _mha_reference,
        variants.multi_head_attention,
        "Multi-head attention: project, split into heads, attend per head, merge, project.",
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
