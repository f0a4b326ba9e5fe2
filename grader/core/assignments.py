"""An assignment ready to grade: its interface (``grader.registry``) joined with its task
(``grader.core.tasks``). Imports NumPy; the registry alone does not."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from grader import registry
from grader.core.tasks import TASKS, Outputs, Task, build_probes
from grader.model import DEFAULT_SEED, Probe

__all__ = ["Assignment", "Outputs", "get"]


@dataclass(frozen=True)
class Assignment:
    id: str
    task: Task
    function: str
    signature: str
    arg_names: tuple[str, ...]
    summary: str
    conventions: tuple[str, ...]

    def reference(self, *args: Any) -> Outputs:
        return self.task.reference(*args)

    def variant(self, recipe: Any, *args: Any) -> Outputs:
        return self.task.pipeline(recipe, *args)

    def probes(self, seed: int = DEFAULT_SEED) -> list[Probe]:
        return build_probes(self.task.name, seed)

    def rubric(self) -> dict[str, Any]:
        return registry.rubric(self.id)


@cache
def get(assignment_id: str) -> Assignment:
    """The assignment ``assignment_id`` (``KeyError`` naming the known ones when unknown)."""
    info = registry.get(assignment_id)
    return Assignment(info.id, TASKS[info.task], info.function, info.signature, info.arg_names,
                      info.summary, info.conventions)
