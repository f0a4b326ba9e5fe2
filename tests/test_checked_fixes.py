"""A literal fix is checked on the student's own code before a report shows it: applied as the
student would apply it (``grader.core.fixes``) and graded again, it must remove its mistake,
add none and not lower the score; a fix that fails is not shown (the line and the sentence
stay)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.core.fixes import applied, edits_of

SUBMISSIONS = Path(__file__).parent / "submissions"


def test_a_fix_replaces_its_lines_indented_as_they_were_bottom_up() -> None:
    source = "def f(x):\n    y = x / 3\n    z = y\n    return z"
    location = {"line": 2, "fixed": "y = x / 3 ** 0.5\nprint(y)",
                "also": [{"line": 4, "fixed": "return z + 0"}]}
    assert applied((source,), location) == (
        "def f(x):\n    y = x / 3 ** 0.5\n    print(y)\n    z = y\n    return z + 0",)


def test_a_fix_in_a_notebook_changes_its_own_cells() -> None:
    cells = ("import numpy as np", "def f(x):\n    return x / 3", "def g(x):\n  return x")
    location = {"cell": 2, "line": 2, "fixed": "return x / 3 ** 0.5",
                "also": [{"cell": 3, "line": 2, "fixed": "return -x"}]}
    assert applied(cells, location) == (
        "import numpy as np", "def f(x):\n    return x / 3 ** 0.5", "def g(x):\n  return -x")


def test_a_location_without_a_fix_or_off_the_source_changes_nothing() -> None:
    assert edits_of({"line": 1, "code": "x"}) == []
    assert applied(("a\nb",), {"line": 1, "code": "a"}) == ("a\nb",)
    assert applied(("a\nb",), {"line": 9, "fixed": "c"}) == ("a\nb",)
    assert applied(("a\nb",), {"cell": 4, "line": 1, "fixed": "c"}) == ("a\nb",)


@pytest.mark.e2e
def test_every_fix_shown_is_marked_checked() -> None:
    from grader import grade

    report = grade(Path(__file__).parents[1] / "assignments" / "attention" / "examples" /
                   "two_misconceptions.py", assignment="attention")
    locations = [m["location"] for m in report["misconceptions"]]
    assert len(locations) == 2
    assert all(location["fixed"] and location["checked"] for location in locations)


@pytest.mark.e2e
def test_a_fix_that_would_not_work_on_this_code_is_not_shown() -> None:
    """The blend-keys fix `out[...] = w @ v` names a `v` this loop never defines (applied, it
    raises NameError): the report quotes the line and says the fix in a sentence instead."""
    from grader import grade

    report = grade(SUBMISSIONS / "attention" / "combo_loops_dk_keys.py", assignment="attention")
    found = {m["id"]: m for m in report["misconceptions"]}
    assert set(found) == {"blend-keys", "scale-by-dk"}
    blend = found["blend-keys"]["location"]
    assert blend["code"] == "out[idx + (i,)] = w @ k"
    assert "fixed" not in blend and "checked" not in blend
    assert found["blend-keys"]["fix"]  # (the sentence stays)
    assert found["scale-by-dk"]["location"]["checked"] is True


@pytest.mark.e2e
def test_a_fix_of_one_line_of_a_mistake_written_on_two_is_not_shown() -> None:
    """dQ and dK are each divided by d_k, on two lines: `/ d_k ** 0.5` on the dQ line alone
    leaves no ID to name, yet dK is still wrong (the score does not move), so the report says
    the fix in a sentence; where one line holds the mistake, the literal fix is shown."""
    from grader import grade

    two_lines = grade(SUBMISSIONS / "attention_backward" / "backward_scale_by_dk.py",
                      assignment="attention_backward")
    [finding] = two_lines["misconceptions"]
    assert finding["id"] == "backward-scale-by-dk" and "fixed" not in finding["location"]
    one_line = grade(SUBMISSIONS / "attention_backward" / "backward_scale_by_dk_lse.py",
                     assignment="attention_backward")
    [finding] = one_line["misconceptions"]
    assert finding["location"]["fixed"] == "dS = dS / d_k ** 0.5"
    assert finding["location"]["checked"]
