"""How long a text report is, and whether it reads as one (issue 34, item 4): the measures the
budget tests (``tests/test_report_length.py``) and ``bench/report_lengths.py`` take.

The first part of a report is what to fix: per mistake its title, the line, the literal fix or
the sentence, and one sentence of why. Educators rate hints of 80 to 160 words best, so each
mistake's block there is held to ``FIRST_PART_WORDS``; the whole text report to ``MAX_LINES``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

#: at most this many words per mistake in the first part
FIRST_PART_WORDS = 160
#: at most this many lines in a whole text report (the external check's limit)
MAX_LINES = 80
#: the median over a corpus of text reports must stay at or below this many lines
MEDIAN_LINES = 45

#: what a template or an unfilled value leaves behind
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}|\bTODO\b|\bXXX\b")


@dataclass(frozen=True)
class Lengths:
    """What one text report measures."""

    lines: int
    #: the words of each mistake's block in the first part, in order
    words: tuple[int, ...]
    #: prose sentences that occur more than once
    repeated: tuple[str, ...]
    #: placeholders left in the text
    placeholders: tuple[str, ...]


def measure(report: dict[str, Any]) -> Lengths:
    """The text report of ``report`` measured."""
    from grader.render import text

    rendered = text.render(report)
    lines = rendered.rstrip("\n").split("\n")
    words = tuple(len(" ".join(block).split()) for block in first_part_blocks(text.summary(report)))
    ours = "\n".join(line for line in lines if not _students(line, report))
    return Lengths(len(lines), words, repeated_sentences(lines),
                   tuple(_PLACEHOLDER.findall(ours)))


def _students(line: str, report: dict[str, Any]) -> bool:
    """Does ``line`` quote the student's code or what it raised (a "TODO" there is theirs)?"""
    stripped = line.strip()
    if stripped in students_code(report):
        return True
    raised = [x.strip() for e in report["errors"] for x in e["message"].splitlines()]
    return any(len(x) > 8 and (x in stripped or stripped in x) for x in raised)


def students_code(report: dict[str, Any]) -> set[str]:
    """The lines of the student's code a report quotes (a "# TODO" there is theirs)."""
    code: set[str] = set()
    for item in report["misconceptions"]:
        location = item.get("location")
        for edit in (location, *location.get("also", ())) if location else ():
            code.add(str(edit["code"]).strip())
            code.update(line.strip() for line in str(edit.get("fixed", "")).split("\n"))
    located = (report.get("located") or {}).get("location")
    if located:
        code.add(str(located["code"]).strip())
    return code


def first_part_blocks(summary: list[str]) -> list[list[str]]:
    """Each mistake's block of lines in the first part of a text report (its summary): from
    its numbered title to the next one, or to the first line that is not indented."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in summary:
        if _NUMBERED.match(line):
            current = [line]
            blocks.append(current)
        elif current is not None and line.startswith("     "):
            current.append(line)
        else:
            current = None  # (the block ended: an error, a blank line)
    return blocks


_NUMBERED = re.compile(r"^  \d+\. ")


def repeated_sentences(lines: list[str]) -> tuple[str, ...]:
    """Sentences a reader would read twice: prose sentences of six words or more (wrapped
    lines joined; code lines left out) that occur more than once."""
    prose = " ".join(line.strip() for line in lines if _is_prose(line))
    sentences = [s for s in _SENTENCE_END.split(prose) if len(s.split()) >= 6]
    return tuple(sorted(s for s, count in Counter(sentences).items() if count > 1))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


def _is_prose(line: str) -> bool:
    """Not code: the text view indents quoted and fixed code and reproducing calls by eight
    spaces or more, and prose lines starting there begin with a capital letter."""
    stripped = line.strip()
    return bool(stripped) and (not line.startswith(" " * 8) or (
        stripped[:1].isupper() and not re.match(r"[A-Z]\w* = |[A-Z], ", stripped)))


def over_budget(lengths: Lengths) -> list[str]:
    """What breaks the budget, in words a test failure shows (empty: within it)."""
    broken = []
    if lengths.lines > MAX_LINES:
        broken.append(f"{lengths.lines} lines (at most {MAX_LINES})")
    broken += [f"mistake {number}: {count} words in the first part (at most "
               f"{FIRST_PART_WORDS})" for number, count in enumerate(lengths.words, 1)
               if count > FIRST_PART_WORDS]
    broken += [f"repeated: {line!r}" for line in lengths.repeated]
    broken += [f"placeholder: {found!r}" for found in lengths.placeholders]
    return broken
