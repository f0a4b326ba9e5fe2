"""Correct submissions in notebook and torch styles, and messy notebooks, through the public API."""

from __future__ import annotations

import json

import pytest

from grader.config import Limits

from .conftest import SUBMISSIONS, notebook

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

ATTENTION = (SUBMISSIONS / "attention" / "correct_matmul.py").read_text().split("\n", 1)[1]
BUGGY = (SUBMISSIONS / "attention" / "scale_by_dk.py").read_text().split("\n", 1)[1]


@pytest.mark.parametrize("assignment,fixture", [
    ("softmax", "correct_basic"),
    ("attention", "correct_einsum_prescaled"),
    ("multi_head_attention", "correct_head_loop"),
])
def test_correct_notebook_gets_full_marks(grade_source, assignment: str, fixture: str) -> None:
    source = (SUBMISSIONS / assignment / f"{fixture}.py").read_text()
    report = grade_source(notebook(("markdown", "# My solution"), source), "solution.ipynb")
    assert report["assignment"] == assignment
    assert (report["score"], report["misconceptions"]) == (report["max_score"], []), \
        report["errors"]


def test_messy_notebook_still_graded(grade_source) -> None:
    cells = [
        "%matplotlib inline\n!pip install nothing\nimport numpy as np",
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n    return None  # first try",
        "raise RuntimeError('a cell that fails')",
        "name = input('your name? ')",
        "%%bash\necho not python",
        "np.exp?",
        "files = !ls\nx = 1",
        ATTENTION,  # the last definition wins
        "%%time\nresult = scaled_dot_product_attention(np.eye(2), np.eye(2), np.eye(2))",
    ]
    report = grade_source(notebook(*cells), "messy.ipynb")
    assert report["status"] == "graded"
    assert report["score"] == report["max_score"]
    kinds = {e["kind"] for e in report["errors"]}
    assert "runtime-error" in kinds  # the failing cells are reported, not fatal
    assert any("cell 3" in e["message"] for e in report["errors"])


def test_notebook_with_endless_cell_still_graded(grade_source) -> None:
    cells = [ATTENTION, "while True:\n    pass"]
    report = grade_source(notebook(*cells), "loop.ipynb", limits=Limits(cell_seconds=2))
    assert report["status"] == "graded" and report["score"] == report["max_score"]
    assert any(e["kind"] == "timeout" for e in report["errors"])


def test_buggy_notebook_is_diagnosed(grade_source) -> None:
    report = grade_source(notebook(BUGGY), "bug.ipynb")
    assert [m["id"] for m in report["misconceptions"]] == ["scale-by-dk"]


def test_nbformat_3_notebook_is_upgraded(grade_source) -> None:
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {},
          "worksheets": [{"cells": [{"cell_type": "code", "input": ATTENTION, "language": "python",
                                     "outputs": [], "metadata": {}}], "metadata": {}}]}
    report = grade_source(json.dumps(v3), "old.ipynb")
    assert report["score"] == report["max_score"]


@pytest.mark.parametrize("content,kind", [
    ("{not json", "invalid-notebook"),
    (json.dumps({"nbformat": 4, "cells": "nope"}), "invalid-notebook"),
    (json.dumps([1, 2]), "invalid-notebook"),
    (notebook(("markdown", "only prose")), "missing-function"),
])
def test_broken_notebooks_get_a_clear_error(grade_source, content: str, kind: str) -> None:
    report = grade_source(content, "broken.ipynb", assignment="attention")
    assert report["status"] == "error"
    assert [e["kind"] for e in report["errors"]] == [kind]


TORCH_SOURCES = {
    "softmax": """import torch


def softmax(x, axis=-1):
    return torch.softmax(torch.as_tensor(x), dim=axis)
""",
    "attention": """import torch
import torch.nn.functional as F


def scaled_dot_product_attention(Q, K, V, mask=None):
    q, k, v = (torch.tensor(a, requires_grad=True) for a in (Q, K, V))
    m = None if mask is None else torch.as_tensor(mask)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
""",
    "multi_head_attention": """import torch


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    t = lambda a: torch.as_tensor(a, dtype=torch.float32)
    q, k, v = t(X_q) @ t(W_q), t(X_kv) @ t(W_k), t(X_kv) @ t(W_v)
    split = lambda x: x.unflatten(-1, (num_heads, -1)).transpose(-2, -3)
    m = None if mask is None else torch.as_tensor(mask).unsqueeze(-3)
    heads = torch.nn.functional.scaled_dot_product_attention(split(q), split(k), split(v), attn_mask=m)
    return heads.transpose(-2, -3).flatten(-2) @ t(W_o)
""",
}


@pytest.mark.parametrize("assignment", sorted(TORCH_SOURCES))
def test_torch_style_gets_full_marks(grade_source, assignment: str) -> None:
    pytest.importorskip("torch")
    report = grade_source(TORCH_SOURCES[assignment], assignment=assignment)
    assert (report["score"], report["misconceptions"]) == (report["max_score"], [])
