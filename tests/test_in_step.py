"""Values two places must agree on, tested equal instead of kept in step by a comment, and
messages said one way wherever they are said."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import config, launch, registry

GRADER = Path(registry.__file__).resolve().parent


def test_the_launcher_moves_the_seed_to_the_variable_the_grader_reads() -> None:
    """(``launch`` loads before the grader and imports none of it: it has its own copy)"""
    assert launch.SEED_VARIABLE == config.SEED_VARIABLE


@pytest.mark.e2e  # (a fresh interpreter)
def test_the_launcher_stays_light() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys, grader.launch; print(sorted("
                           "m for m in sys.modules if m.startswith(('grader', 'numpy'))))"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['grader', 'grader.launch', 'grader.version']"  # no NumPy


def test_an_unknown_assignment_is_named_with_the_closest_and_every_choice() -> None:
    said = registry.unknown_assignment("atention")
    assert said.startswith("unknown assignment 'atention'; did you mean 'attention'? (known: ")
    assert all(name in said for name in registry.ids())
    assert "did you mean" not in registry.unknown_assignment("zzzzzz")
    with pytest.raises(KeyError) as raised:
        registry.get("atention")
    assert raised.value.args == (said,)


def test_no_module_words_an_unknown_assignment_itself() -> None:
    wording = re.compile(r"unknown assignment|neither an assignment|no such assignment", re.I)
    own = [str(path.relative_to(GRADER)) for path in GRADER.rglob("*.py")
           if path.name != "registry.py" and wording.search(path.read_text())]
    assert own == []
