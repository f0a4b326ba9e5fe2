"""One module per task: its reference (SPEC section 1) and its pipeline of stages with buggy
alternatives (``pipeline(recipe, *args, record=None)``), with the knobs only it has.

A task module defines ``reference`` and ``pipeline`` and declares its own knobs with
``reference.stages.knobs``; the stages several tasks share are in ``reference.stages``. Every
task module is loaded with this package, so that ``stages.CORRECT`` knows every knob.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def _load_all() -> dict[str, ModuleType]:
    return {info.name: importlib.import_module(f"{__name__}.{info.name}")
            for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")}


#: task name -> its module
MODULES: dict[str, ModuleType] = _load_all()
