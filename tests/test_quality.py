"""Fast checks of the catalogue, the registry and the evidence, with no child process: every
catalogued mistake graded in-process is named exactly; every assignment entry is complete."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

import pytest

from grader import registry
from grader.core.assignments import Assignment, get
from grader.core.scoring import CONTRACT_CHECKS
from grader.core.tasks import build_probes
from grader.notebook import grade_function
from reference import catalogue

#: deviations that compute exactly what another row's does, on every input, so no probe can
#: tell them apart: the name given instead, and why it is as right
DECLARED_TIES = {
    # V = X_kv @ W_k is K itself: "you blend the keys, not the values" says it exactly
    ("multi_head_attention", "proj_matrices", "qkk"): "blend-keys",
    # ... and so is its exact gradient (dW_v is 0, dW_k takes both paths, in either)
    ("multi_head_attention_backward", "proj_matrices", "qkk"): "blend-keys",
}


def _deviations() -> list[tuple[str, str, str]]:
    return [(aid, knob, choice) for aid in registry.builtins()
            for knob, choice in catalogue.deviations(get(aid).task.name)]


def _student(assignment: Assignment, recipe: dict[str, str]) -> Callable[..., Any]:
    """A submission that makes exactly the recipe's mistakes."""
    def function(*args: Any) -> Any:
        returned = tuple(a for a in assignment.variant(recipe, *args) if a is not None)
        return returned[0] if len(returned) == 1 else returned

    function.__name__ = assignment.function
    return function


@pytest.mark.parametrize("assignment_id,knob,choice", _deviations())
def test_every_catalogued_mistake_is_named_exactly(assignment_id: str, knob: str,
                                                   choice: str) -> None:
    assignment = get(assignment_id)
    # (what is named, not the tiling check's 2048 x 2048 call: test_tiling.py measures that)
    report = grade_function(_student(assignment, {knob: choice}), assignment_id, measure=False)
    named = sorted(m["id"] for m in report["misconceptions"])
    tie = DECLARED_TIES.get((assignment_id, knob, choice))
    expected = [tie] if tie else sorted(catalogue.ids_for(assignment.task.name, {knob: choice}))
    assert named == expected
    assert report["score"] < report["max_score"]


def test_declared_ties_are_still_ties() -> None:
    """A tie that a new probe breaks must leave the list (its row is then named directly)."""
    for (assignment_id, knob, choice), name in DECLARED_TIES.items():
        assignment = get(assignment_id)
        report = grade_function(_student(assignment, {knob: choice}), assignment_id)
        assert [m["id"] for m in report["misconceptions"]] == [name]
        assert catalogue.ids_for(assignment.task.name, {knob: choice}) != (name,)


@pytest.mark.parametrize("assignment_id", registry.one_part_ids())
def test_each_assignment_entry_is_complete(assignment_id: str) -> None:
    info = registry.get(assignment_id)
    assignment = get(assignment_id)
    assert info.function in info.signature and info.arg_names
    called = info.signature.rpartition(".forward")[2] or info.signature  # a class: its forward
    parameters = re.findall(r"(\w+)(?:=[^,)]*)?(?=[,)])", called.split("(", 1)[1])
    assert list(info.arg_names) == parameters[: len(info.arg_names)]
    assert info.summary and info.conventions
    probes = build_probes(assignment.task.name, 0)  # the whole battery, whatever the interface
    tags = set().union(*(p.tags for p in probes))
    concept_ids = {c.id for c in assignment.task.concepts}
    rubric = registry.rubric(assignment_id)
    assert rubric["assignment"] == assignment_id
    for check in rubric["checks"]:
        if check["category"] == "reference":
            selector = check["probes"]
            assert set(selector.get("all", [])) | set(selector.get("none", [])) <= tags, check
            assert any(set(selector.get("all", [])) <= p.tags
                       and not set(selector.get("none", [])) & p.tags for p in probes), check
        else:
            assert check["id"] in CONTRACT_CHECKS or check["id"] in concept_ids or (
                check["id"] == "tiling" and assignment.task.tiling_call is not None), check
    probe_ids = {p.id for p in probes}
    for concept in assignment.task.concepts:
        assert set(concept.needs) <= probe_ids, concept.id
    assert abs(sum(c["points"] for c in rubric["checks"]) - rubric["max_score"]) < 1e-9


def test_inference_order_is_unambiguous() -> None:
    infos = registry.inference_order()
    assert len({i.inference_priority for i in infos}) == len(infos)
    assert len({i.function for i in infos}) == len(infos)


def test_unknown_assignment_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="softmax"):
        registry.get("atention")


@pytest.mark.parametrize("assignment_id", registry.one_part_ids())
def test_every_evidence_sentence_fills_all_its_fields(assignment_id: str) -> None:
    """Each row's sentence formats with the fields of its task, on every probe: no braces left."""
    assignment = get(assignment_id)
    task = assignment.task.name
    for row in catalogue.CATALOGUE:
        if row.variants and not any(task in v.tasks for v in row.variants):
            continue
        recipe = {v.knob: v.choice for v in row.variants[:1] if task in v.tasks}
        wanted = {field for _, field, _, _ in string.Formatter().parse(row.fingerprint) if field}
        for probe in assignment.probes():
            fields = {**assignment.task.evidence_fields(probe, recipe), "input": "an input"}
            assert wanted <= set(fields), (row.id, wanted - set(fields))
            text = row.fingerprint.format(**fields)
            assert "{" not in text and "}" not in text, (row.id, text)


def test_the_typed_report_round_trips_through_its_json_form() -> None:
    from grader.core.report import Report, validate

    assignment = get("attention")
    for recipe in ({}, {"scale": "dk"}, {"mask": "inverted", "scale": "none"}):
        report = grade_function(_student(assignment, recipe), "attention")
        validate(report)
        assert Report.from_dict(report).to_dict() == report


@pytest.mark.parametrize("actual,expected,words", [
    ([[0.5, 0.5]], [[0.5, 0.5]], ""),
    ([[0.5, 0.5]], [[0.5, 0.5], [0.2, 0.8]], "output shape (1, 2) does not match the expected (2, 2)."),
    ([[0.5, float("nan")]], [[0.5, 0.5]], "output has 1 NaN/inf value(s) where finite values are "
                                          "expected (first at index (0, 1): nan, expected 0.5)."),
    ([[0.5, 0.75]], [[0.5, 0.5]], "output: 1 / 2 elements differ (50.0%); greatest absolute "
                                  "difference 0.25 at index (0, 1)"),
])
def test_mismatch_messages_say_what_came_what_was_expected_and_where(
        actual: list[list[float]], expected: list[list[float]], words: str) -> None:
    import numpy as np

    from grader.core.compare import mismatch_message, tolerance_for

    got, want = np.array(actual), np.array(expected)
    message = mismatch_message(got, want, tolerance_for(got, want))
    assert message.startswith(words) if words else message == ""
    if "differ" in words:
        assert message.endswith("got 0.75, expected 0.5.")


def test_all_your_mistakes_counts_the_mistakes_the_report_names() -> None:
    """One mistake may take two of the recipe's choices (heads never split, scaled by d_model):
    "with all 3 of your mistakes" beside two named ones was a count of choices."""
    assignment = get("multi_head_attention")
    report = grade_function(_student(assignment, {"scale": "sqrt_dmodel", "split": "none",
                                                  "values": "k"}), "multi_head_attention")
    named = len(report["misconceptions"])
    counts = {m["id"]: re.findall(r"with (both|all \d+) of your mistakes", m["evidence"])
              for m in report["misconceptions"]}
    said = {"both" if named == 2 else f"all {named}"}
    assert named >= 2 and all(found and set(found) == said for found in counts.values()), counts


def test_the_rounding_margin_is_told_only_for_a_near_miss() -> None:
    """Far off, the margin allowed says nothing the student can use; on a near miss (float32,
    rounding) it says why a small difference still fails."""
    import numpy as np

    from grader.core.compare import mismatch_message, tolerance_for

    want = np.array([[0.5, 0.5]])
    far, near = np.array([[0.5, 0.75]]), np.array([[0.5, 0.5 + 1e-4]])
    assert "rounding margin" not in mismatch_message(far, want, tolerance_for(far, want))
    assert "rounding margin" in mismatch_message(near, want, tolerance_for(near, want))


def test_a_large_public_test_input_is_fetched_by_name_and_reproduces_the_numbers() -> None:
    """The reproducing call of a multi-head finding pastes no 12 x 12 matrix: it fetches the
    test input by name, and running it gives the number the evidence quotes."""
    import re

    from grader import probe_inputs

    assignment = get("multi_head_attention")
    student = _student(assignment, {"scale": "none"})
    report = grade_function(student, "multi_head_attention")
    evidence = report["misconceptions"][0]["evidence"]
    assert "np.array(" not in evidence and "probe_inputs(" in evidence
    call = evidence.split("Reproduce it with:\n", 1)[1]
    namespace: dict[str, Any] = {"multi_head_attention": student,
                                 "probe_inputs": probe_inputs}
    exec(call.replace("from grader import probe_inputs\n", "").replace(  # noqa: S102
        "multi_head_attention(", "result = multi_head_attention(", 1), namespace)
    index, yours = re.search(r"At index \(([\d, ]+)\): yours ([-\d.e]+)", evidence).groups()
    at = tuple(int(i) for i in index.split(","))
    assert abs(float(namespace["result"][at]) - float(yours)) < 1e-5


def test_every_view_starts_with_what_to_fix() -> None:
    """Text, Markdown and HTML open with the score and one line per misconception, carrying the
    numbers that show it; nothing of it under a hidden seed's always-visible Markdown."""
    from grader.render import html, markdown, text
    from grader.render.visible import student_view

    assignment = get("attention")
    report = grade_function(_student(assignment, {"scale": "dk", "mask": "inverted"}),
                            "attention")
    first = report["misconceptions"][0]["evidence"].splitlines()[0]
    for view in (text.render(report), markdown.render(report), html.render(report)):
        head = view[: view.index("scale-by-dk") + 400]
        assert "What to fix" in head and "mask-inverted" in view[: view.index("Details") if
                                                                   "Details" in view else None]
    assert first.split(";")[0] in text.render(report).split("Details")[0]
    secret = {**report, "metadata": {**report["metadata"], "hidden_probes": True}}
    hidden = markdown.render(student_view(secret)).split("### Misconceptions")[0]
    assert "What to fix" in hidden and first.split(";")[0] not in hidden


def test_the_child_orders_rotate_half_features_as_the_variants_do() -> None:
    """interface.py keeps its own copy of the (i, i + d/2) feature order (the child never
    imports reference): the course is handed what the variant of its mistake assumes."""
    from grader.sandbox import interface
    from reference.tasks import rope

    for d in (2, 4, 6, 16):
        assert interface.halves_order(d).tolist() == rope.halves_order(d).tolist()


def test_the_grader_reads_the_tracers_marks_as_the_child_writes_them() -> None:
    """trace.py runs in the child and never imports the grader; the session keeps its copy of
    the mark for a line that changed an input (importing trace.py there would load NumPy
    before the child has started)."""
    from grader.sandbox import session, trace

    assert session.CHANGED_INPUT == trace.CHANGED_INPUT


def test_every_view_says_the_same_rendered_right() -> None:
    """HTML shows code spans as code, never as backticks; hidden tests say in every view why a
    score may differ from the self-check's; the notebook's display bundle has the HTML and the
    text report."""
    from grader.notebook import Feedback
    from grader.render import html, markdown, text

    assignment = get("attention")
    report = grade_function(_student(assignment, {"scale": "dk"}), "attention", seed=7)
    assert report["metadata"]["hidden_probes"]
    shown = html.render(report)
    literal = (report["misconceptions"][0].get("location") or {}).get("fixed")
    # (the sentence, with its code as code, where no literal fix is shown instead)
    assert literal or "<code>np.sqrt(d_k)</code>" in shown
    assert "`" not in shown.split("<pre>")[0]
    for view in (text.render(report), markdown.render(report), shown):
        assert "hidden tests, with other values than your self-check" in " ".join(view.split())
    bundle = Feedback(report)._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"].startswith("attention-grader: attention")


IDENTITY_ROPES = {
    "returns_x": "def rope(x, positions=None, theta=10000.0):\n    return x\n",
    # XCS224N's apply_rotary_emb left as handed out, its cache built and never used
    "cache_unused": (
        "import numpy as np\n\n\n"
        "def rope(x, positions=None, theta=10000.0):\n"
        "    d = x.shape[-1]\n"
        "    angles = np.arange(x.shape[-2])[:, None] * theta ** (-np.arange(0, d, 2) / d)\n"
        "    cache = np.stack([np.cos(angles), np.sin(angles)], axis=-1)\n"
        "    return x.copy()\n"),
}


@pytest.mark.parametrize("name", sorted(IDENTITY_ROPES))
def test_a_rope_that_rotates_nothing_earns_a_fraction_of_one_values_check(
        name: str, tmp_path: Any) -> None:
    """The identity keeps norms, leaves position 0 alone and scores by distance: the conceptual
    checks say nothing about it, so doing nothing earns less than half of one values check."""
    from .conftest import grade_trusted

    path = tmp_path / f"{name}.py"
    path.write_text(IDENTITY_ROPES[name])
    report = grade_trusted(path, "rope")
    values = max(c["max_points"] for c in report["checks"] if c["id"].startswith("values"))
    assert report["score"] <= values / 2
    concepts = {"pair-norms-kept", "position-zero-identity", "relative-positions"}
    assert all(not c["passed"] and "nothing is rotated" in c["message"]
               for c in report["checks"] if c["id"] in concepts)
