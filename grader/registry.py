"""The assignments the grader knows, each one folder: ``assignments/<id>/assignment.toml`` (its
interface and the task it is graded on), ``rubric.json`` (the points), ``starter/``.

Import-light (standard library only), so the command line and every integration can list and
check assignments without loading NumPy. The numeric side of a task (reference, probes, variants,
concepts) is in ``grader.core.tasks``; ``grader.core.assignments`` joins the two.

Adding an assignment whose task exists = adding its folder. Nothing else is edited.
"""

from __future__ import annotations

import json
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


def _builtin_root() -> Any:
    if _SOURCE_TREE.is_dir():  # a source checkout or an editable install
        return _SOURCE_TREE
    return resources.files("grader._assignments")  # a wheel carries assignments/ as package data


def _read(folder: Any) -> AssignmentInfo:
    data = tomllib.loads((folder / INTERFACE_FILE).read_text(encoding="utf-8"))
    return AssignmentInfo(
        id=str(data["id"]),
        task=str(data["task"]),
        function=str(data["function"]),
        signature=str(data["signature"]),
        arg_names=tuple(str(a) for a in data["arguments"]),
        summary=str(data.get("summary", "")),
        conventions=tuple(str(c) for c in data.get("conventions", ())),
        inference_priority=int(data.get("inference_priority", 0)),
        folder=folder,
    )


@cache
def builtins() -> dict[str, AssignmentInfo]:
    """The built-in assignments by ID, most advanced first (the inference order)."""
    root = _builtin_root()
    found = [_read(child) for child in root.iterdir()
             if child.is_dir() and (child / INTERFACE_FILE).is_file()]
    found.sort(key=lambda info: (-info.inference_priority, info.id))
    return {info.id: info for info in found}


def ids() -> tuple[str, ...]:
    return tuple(sorted(builtins()))


def get(assignment_id: str) -> AssignmentInfo:
    """The assignment ``assignment_id``; ``KeyError`` with the known IDs when there is none."""
    known = builtins()
    if assignment_id not in known:
        raise KeyError(f"unknown assignment {assignment_id!r} (known: {', '.join(ids())})")
    return known[assignment_id]


def inference_order() -> tuple[AssignmentInfo, ...]:
    return tuple(builtins().values())


def functions() -> dict[str, str]:
    """Assignment ID -> the function it asks for, in inference order."""
    return {info.id: info.function for info in inference_order()}


def infer(defined: Any) -> str | None:
    """The most advanced assignment whose function is among the names ``defined``."""
    names = set(defined)
    return next((info.id for info in inference_order() if info.function in names), None)


@cache
def rubric(assignment_id: str) -> dict[str, Any]:
    """The points of each check, from the assignment's ``rubric.json``."""
    text = (get(assignment_id).folder / RUBRIC_FILE).read_text(encoding="utf-8")
    return dict(json.loads(text))
