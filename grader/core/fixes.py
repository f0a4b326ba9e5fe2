"""A literal fix applied as a student would apply it (pure: sources in, sources out).

A finding's ``location`` may carry ``fixed``, the code that replaces the quoted line, and
``also``, the other lines the same mistake is written on, each with its own. Applying it is
replacing each of those lines by its fixed code, indented as the line was (a fixed code of
several lines puts the rest after it), bottom up, so that added lines move nothing still to do.
The pipeline grades the result again before a report shows the fix (``pipeline.grade``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def edits_of(location: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The lines a literal fix changes: the quoted one and every ``also`` one with a fix."""
    return [edit for edit in (location, *location.get("also", ())) if edit.get("fixed")]


def applied(sources: Sequence[str], location: Mapping[str, Any]) -> tuple[str, ...]:
    """``sources`` (one per notebook code cell, or the file's one) with the fix applied; the
    sources unchanged when the location has no literal fix or names a line that is not there."""
    cells = [source.split("\n") for source in sources]
    edits = edits_of(location)
    for edit in sorted(edits, key=lambda e: (-(e.get("cell") or 1), -int(e["line"]))):
        index, line = (edit.get("cell") or 1) - 1, int(edit["line"])
        if not 0 <= index < len(cells) or not 1 <= line <= len(cells[index]):
            return tuple(sources)
        old = cells[index][line - 1]
        indent = old[: len(old) - len(old.lstrip())]
        cells[index][line - 1: line] = [indent + new for new in str(edit["fixed"]).split("\n")]
    return tuple("\n".join(lines) for lines in cells)
