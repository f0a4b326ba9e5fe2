"""The report itself, as JSON (the default format)."""

from __future__ import annotations

import json
from typing import Any


def render(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
