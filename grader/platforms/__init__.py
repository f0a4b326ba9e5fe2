"""The platforms courses grade on, and the one registry of formats.

A platform is one module here that owns everything about it: its result format (a ``FORMAT``:
name, renderer, what a student reads of it, whether it keeps hidden tests secret), how the
grader runs there, and what it reads back (Gradescope: ``gradescope.py``; GitHub Classroom and
workflows: ``github.py``; PrairieLearn, Autolab, Moodle CodeRunner, CodeGrade, Coursera and JUnit XML
for CI, one module each). What a student may see under hidden tests is decided once, in
``grader.render.visible``.

``FORMATS`` is read by the command line (its ``--format`` choices) and by the tests of what
students see (injection, hidden-probe leaks), so a platform added here is offered and tested
everywhere at once.
"""

from __future__ import annotations

from grader.platforms import (
    autolab,
    codegrade,
    coderunner,
    coursera,
    github,
    gradescope,
    junit,
    prairielearn,
)
from grader.render.formats import HTML, JSON, MARKDOWN, TEXT, Format, Renderer

#: the platforms' formats, then every format in the order ``--help`` lists them
PLATFORMS: tuple[Format, ...] = (gradescope.FORMAT, github.FORMAT, prairielearn.FORMAT,
                                 autolab.FORMAT, coderunner.FORMAT, codegrade.FORMAT,
                                 coursera.FORMAT, junit.FORMAT)
FORMATS: dict[str, Format] = {f.name: f for f in (JSON, TEXT, *PLATFORMS, MARKDOWN, HTML)}
RENDERERS: dict[str, Renderer] = {name: f.render for name, f in FORMATS.items()}

__all__ = ["FORMATS", "PLATFORMS", "RENDERERS"]
