"""Stage 1: read a ``.py`` file or ``.ipynb`` notebook into a Submission (no student code runs).

A ``.py`` file is parsed first, so a syntax error becomes a report without starting a process.
A notebook is read as JSON; version 4 is taken directly, older versions are upgraded with
nbformat. Only code cells count; IPython magics and ``!`` shell escapes are neutralised so that a
cell that is plain Python apart from them still runs.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any

from grader.model import GraderError, Submission, printable_name

MAX_SOURCE_BYTES = 4 << 20
MAX_NOTEBOOK_BYTES = 64 << 20
#: cell magics whose body is ordinary Python
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "memit", "debug"}


class LoadError(Exception):
    """The submission cannot be run at all; carries the report error."""

    def __init__(self, error: GraderError, defined: tuple[str, ...] = ()) -> None:
        super().__init__(error.message)
        self.error = error
        self.defined = defined


_NAME_CHARACTERS = frozenset("_.,[]() \t")


def _assigned_magic(line: str) -> str | None:
    """The target of ``x = %magic`` or ``a, b = !command``, else None (one pass: linear)."""
    left, equals, right = line.partition("=")
    target = left.strip()
    if not equals or not target or not right.lstrip().startswith(("%", "!")):
        return None
    if not all(c.isalnum() or c in _NAME_CHARACTERS for c in target):
        return None
    return target


def neutralise_magics(source: str) -> str:
    """Turn IPython-only lines into no-ops; leave plain Python untouched.

    Lines are cut as IPython cuts them (``str.splitlines``) and every line ending is kept, so
    the code that runs is exactly the code Jupyter runs (a U+2028 inside a comment stays inside
    the comment). Linear in the cell's length.
    """
    if not any(mark in source for mark in "%!?"):
        return source  # (no line below could change: no need to parse it)
    try:
        ast.parse(source)
        return source
    except (SyntaxError, ValueError):
        pass
    lines = source.splitlines(keepends=True)
    if lines and lines[0].lstrip().startswith("%%"):
        magic = lines[0].lstrip()[2:].split(maxsplit=1)[0] if lines[0].strip() != "%%" else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return ""
        lines = lines[1:]
    cleaned = []
    for line in lines:
        body = line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        ending = line[len(body):]
        stripped = body.lstrip()
        indent = body[: len(body) - len(stripped)]
        target = _assigned_magic(body)
        if stripped.startswith(("%", "!")):
            cleaned.append(f"{indent}pass{ending}")
        elif target is not None:
            cleaned.append(f"{indent}{target} = None{ending}")
        elif stripped.endswith("?") and not stripped.startswith("#") and "#" not in stripped:
            cleaned.append(f"{indent}pass{ending}")
        else:
            cleaned.append(line)
    return "".join(cleaned)


def defined_names(sources: tuple[str, ...]) -> tuple[str, ...]:
    """Top-level function names a static read finds (for inference before anything runs)."""
    names: list[str] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            names.extend(re.findall(r"^def\s+(\w+)", source, flags=re.MULTILINE))
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.append(node.name)
            elif isinstance(node, ast.Assign):
                names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.extend((a.asname or a.name).split(".")[0] for a in node.names)
    return tuple(dict.fromkeys(names))


def _read_bytes(path: Path, limit: int) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise LoadError(GraderError("syntax-error" if path.suffix.lower() != ".ipynb" else
                                    "invalid-notebook",
                                    f"the file is larger than {limit >> 20} MiB"))
    return data


def load_python(path: Path) -> Submission:
    name = printable_name(path.name)
    data = _read_bytes(path, MAX_SOURCE_BYTES)
    try:
        source = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(GraderError("syntax-error", f"{name} is not UTF-8 text: {exc}")) from exc
    if "\x00" in source:
        raise LoadError(GraderError("syntax-error", f"{name} is not a text file (NUL bytes)"))
    try:
        compile(source, name, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        text = (exc.text or "").rstrip()
        detail = f"\n    {text}" if text else ""
        raise LoadError(GraderError("syntax-error", f"{name}, {where}: {exc.msg}{detail}"),
                        defined_names((source,))) from exc
    except (ValueError, RecursionError, MemoryError) as exc:
        raise LoadError(GraderError("syntax-error", f"{name} cannot be parsed: {exc}")) from exc
    return Submission(path, "py", (source,))


def _cells_v4(notebook: dict[str, Any]) -> list[str]:
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise ValueError("it has no list of cells")
    sources = []
    for cell in cells:
        if not isinstance(cell, dict):
            raise ValueError("a cell is not an object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            if not all(isinstance(s, str) for s in source):
                raise ValueError("a cell's source is not text")
            source = "".join(source)
        if not isinstance(source, str):
            raise ValueError("a cell's source is not text")
        sources.append(source)
    return sources


def _upgrade(text: str) -> dict[str, Any]:
    import nbformat  # imported only for old notebooks: it is slow to import

    notebook = nbformat.reads(text, as_version=4)
    return dict(notebook)


def load_notebook(path: Path) -> Submission:
    name = printable_name(path.name)
    data = _read_bytes(path, MAX_NOTEBOOK_BYTES)
    try:
        text = data.decode("utf-8-sig")
        notebook = json.loads(text)
        if not isinstance(notebook, dict):
            raise ValueError("the top level is not an object")
        version = notebook.get("nbformat")
        if version != 4:
            if not isinstance(version, int) or version > 4:
                raise ValueError(f"unsupported nbformat version {version!r}")
            notebook = _upgrade(text)
        sources = _cells_v4(notebook)
    except (ValueError, UnicodeDecodeError, RecursionError, KeyError, TypeError,
            AttributeError) as exc:
        raise LoadError(GraderError("invalid-notebook",
                                    f"{name} is not a valid Jupyter notebook: {exc}")) from exc
    except Exception as exc:  # nbformat raises its own validation errors for old notebooks
        raise LoadError(GraderError("invalid-notebook",
                                    f"{name} is not a valid Jupyter notebook: {exc}")) from exc
    if not any(s.strip() for s in sources):
        raise LoadError(GraderError("missing-function", f"{name} has no code cells"))
    return Submission(path, "ipynb", tuple(neutralise_magics(s) for s in sources))


SUFFIXES = (".py", ".ipynb")


def has_submission_suffix(path: Path) -> bool:
    """``.py`` or ``.ipynb``, in any case (``Attention.PY`` is a Python file)."""
    return path.suffix.lower() in SUFFIXES


def stays_within(path: Path, folder: Path) -> bool:
    """Does ``path`` lie inside ``folder``, both with their links followed? A link out of a
    submission's own folder (to a classmate's file, a credential) is never read."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def load(path: Path) -> Submission:
    """Read ``path``: ``.ipynb`` as a notebook, ``.py`` as Python source (any case). A path that
    leads out of its own folder through a link is refused, never read."""
    name = printable_name(path.name)
    if not has_submission_suffix(path):
        raise LoadError(GraderError(
            "missing-function", f"{name} is not a .py file or an .ipynb notebook"))
    if not stays_within(path, path.parent):
        raise LoadError(GraderError(
            "missing-function", f"{name} is a link to a file outside the submission's folder; "
                                "links out of the submission are not followed"))
    if path.suffix.lower() == ".ipynb":
        return load_notebook(path)
    return load_python(path)


def candidates(folder: Path) -> tuple[Path, ...]:
    """The .py and .ipynb files under ``folder``, outside hidden and cache folders; a link that
    leads out of ``folder`` is not one of them."""
    found = []
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if (has_submission_suffix(path) and path.is_file() and stays_within(path, folder)
                and not any(p.startswith((".", "__")) or p == "node_modules" for p in parts)):
            found.append(path)
    return tuple(found)
