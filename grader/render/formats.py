"""What a format is: its name, its renderer and what a student reads of its output; and the four
formats of the report itself (json, text, markdown, html). The registry that adds the platforms'
formats is ``grader.platforms.FORMATS``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from grader.render import html, json_format, markdown, text

Renderer = Callable[[dict[str, Any]], str]


class Page(NamedTuple):
    """A text a student reads, and the markup it is shown in: markdown, html or text."""

    markup: str
    text: str


Pages = Callable[[str], list[Page]]


@dataclass(frozen=True)
class Format:
    """One ``--format``: ``render`` turns a report into the output; ``student_pages`` reads back
    from an output the texts a student reads at once (None: only staff read it); a platform that
    ``keeps_hidden_tests_secret`` shows at once only ``grader.render.visible.student_view``."""

    name: str
    render: Renderer
    student_pages: Pages | None = None
    keeps_hidden_tests_secret: bool = False

    @property
    def student_visible(self) -> bool:
        return self.student_pages is not None


def whole_output(markup: str) -> Pages:
    """``student_pages`` of a format whose whole output is one page shown in ``markup``."""

    def pages(output: str) -> list[Page]:
        return [Page(markup, output)]

    return pages


JSON = Format("json", json_format.render)
TEXT = Format("text", text.render, whole_output("text"))
MARKDOWN = Format("markdown", markdown.render, whole_output("markdown"))
HTML = Format("html", html.render, whole_output("html"))
