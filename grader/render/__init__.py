"""Stage 6: one pure function per output format, from the report dict to text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader.render import github, gradescope, html, json_format, markdown, text

RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "json": json_format.render,
    "text": text.render,
    "markdown": markdown.render,
    "gradescope": gradescope.render,
    "github": github.render,
    "html": html.render,
}

__all__ = ["RENDERERS"]
