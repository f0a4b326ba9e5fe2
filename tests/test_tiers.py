"""The fast tier's sample of fixtures (conftest.py, ``fast_sample``): it shows every
misconception the fixtures show, and every folder's correct code, and the cases of a
many-fixture test outside it are marked ``breadth`` (tests/README.md, "The tiers")."""

from __future__ import annotations

import pytest

from .conftest import HERE, expected_ids, fast_sample

FIXTURES = [p.resolve() for p in sorted(HERE.glob("**/*.py"))
            if p.read_text().startswith("# expect:")]


def test_the_sample_shows_every_misconception_a_fixture_shows() -> None:
    shown = {i for path in fast_sample() for i in expected_ids(path)}
    assert shown == {i for path in FIXTURES for i in expected_ids(path)}
    assert len(fast_sample()) < len(FIXTURES) / 3


def test_the_sample_holds_a_correct_fixture_of_every_folder_that_has_one() -> None:
    with_correct = {p.parent for p in FIXTURES if not expected_ids(p)}
    assert with_correct == {p.parent for p in fast_sample() if not expected_ids(p)}


def test_cases_outside_the_sample_or_on_a_hidden_seed_are_breadth(
        request: pytest.FixtureRequest) -> None:
    cases = [item for item in request.session.items
             if item.nodeid.split("[")[0].endswith("test_hidden_seeds_change_no_verdict")
             or item.nodeid.split("[")[0].endswith("test_fixture_gets_exactly_its_misconceptions")]
    if not cases:
        pytest.skip("test_misconceptions.py is not collected in this run")
    for item in cases:
        params = item.callspec.params  # type: ignore[attr-defined]
        beyond = params["path"].resolve() not in fast_sample() or params.get("seed", 0) != 0
        assert (item.get_closest_marker("breadth") is not None) == beyond, item.nodeid
