"""Conceptual probes (pure): properties from the question banks, checked on the student's outputs.

Each check reads only the outputs the student's function returned (and the probe inputs), not the
reference, so it says which concept a wrong submission breaks even when no catalogued
misconception explains it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from grader.model import Array, CallOutcome, Probe

Outcomes = Mapping[str, tuple[Probe, CallOutcome]]
Verdict = tuple[bool, str]
ATOL = 1e-4


@dataclass(frozen=True)
class Concept:
    id: str
    title: str
    question_bank: tuple[str, ...]
    needs: tuple[str, ...]
    check: Callable[[Outcomes], Verdict]


def _out(results: Outcomes, probe_id: str) -> Array:
    outcome = results[probe_id][1]
    assert outcome.output is not None
    return outcome.output.astype(np.float64)


def _close(a: Array, b: Array, atol: float = ATOL) -> bool:
    return a.shape == b.shape and bool(np.all(np.isfinite(a))) and bool(
        np.allclose(a, b, rtol=1e-3, atol=atol))


def _weights_are_distributions(r: Outcomes) -> Verdict:
    w = _out(r, "weights")
    if w.ndim != 2:
        return False, f"with V = identity the output should be the (n, m) weights; got shape {w.shape}."
    sums = w.sum(axis=-1)
    if np.all(w >= -ATOL) and np.allclose(sums, 1.0, atol=1e-3):
        return True, "every row of weights is non-negative and sums to 1."
    return False, (f"with V = identity your output is the weights: row sums are "
                   f"{np.round(sums, 4).tolist()} (min entry {w.min():.4g}); each row should be "
                   "a distribution over the keys (non-negative, summing to 1).")


def _argmax_kept(r: Outcomes) -> Verdict:
    probe = r["weights"][0]
    w = _out(r, "weights")
    scores = probe.args[0] @ probe.args[1].T
    if w.shape != scores.shape:
        return False, f"the weights have shape {w.shape}, expected {scores.shape}."
    ok = np.array_equal(np.argmax(w, axis=-1), np.argmax(scores, axis=-1))
    return ok, ("each query's largest weight is on the key with the largest score q.k."
                if ok else "scaling must not change which key a query weights most: "
                f"argmax of your weights {np.argmax(w, -1).tolist()}, of Q K^T "
                f"{np.argmax(scores, -1).tolist()}.")


def _masked_zero(r: Outcomes) -> Verdict:
    probe = r["weights-masked"][0]
    w = _out(r, "weights-masked")
    mask = probe.args[3]
    if w.shape != mask.shape:
        return False, f"the weights have shape {w.shape}, expected {mask.shape}."
    leaked = np.abs(w[~mask]).max(initial=0.0)
    if leaked <= ATOL and np.allclose(w.sum(-1), 1.0, atol=1e-3):
        return True, "masked keys get exactly zero weight and each row still sums to 1."
    return False, (f"blocked keys should get zero weight with the rest renormalised; the largest "
                   f"weight on a blocked key is {leaked:.4g}, row sums {np.round(w.sum(-1), 4).tolist()}.")


def _padding_ignored(r: Outcomes) -> Verdict:
    a, b = _out(r, "padding"), _out(r, "padding-changed")
    ok = _close(a, b)
    return ok, ("changing a key and value that every query has masked leaves the output unchanged."
                if ok else "a key that every query has masked still changes your output: masked "
                "positions must have no influence at all.")


def _permutation(r: Outcomes) -> Verdict:
    probe = r["permuted"][0]
    base, permuted = _out(r, probe.meta["source"]), _out(r, "permuted")
    order = probe.meta["query_order"]
    if base.shape != permuted.shape:
        return False, "permuting the tokens changed the output's shape."
    ok = _close(permuted, base[order])
    return ok, ("shuffling the queries shuffles the output rows the same way, and shuffling "
                "key/value pairs together changes nothing." if ok else
                "reordering the queries should reorder the output rows identically, and "
                "reordering key/value pairs together should change nothing; your output does not "
                "behave so.")


def _rows_equal_mean(probe_id: str, rows: slice | list[int] | None = None
                     ) -> Callable[[Outcomes], Verdict]:
    def check(r: Outcomes) -> Verdict:
        probe = r[probe_id][0]
        out = _out(r, probe_id)
        values = probe.args[2]
        selected = out if rows is None else out[rows]
        ok = _close(selected, np.broadcast_to(values.mean(axis=0), selected.shape))
        return ok, ("those rows equal the plain mean of the values." if ok else
                    "equal scores give uniform weights, so the output should be the plain mean of "
                    f"the values {np.round(values.mean(axis=0), 4).tolist()}; got "
                    f"{np.round(selected, 4).tolist()}.")

    return check


def _single_key(r: Outcomes) -> Verdict:
    probe = r["single-key"][0]
    out = _out(r, "single-key")
    value = probe.args[2][0]
    ok = _close(out, np.broadcast_to(value, out.shape))
    return ok, ("with one key every query returns that key's value." if ok else
                f"with a single key its weight is 1, so every output row should be "
                f"{value.tolist()}; got {np.round(out, 4).tolist()}.")


def _identical_rows(probe_id: str, first: int, second: int) -> Callable[[Outcomes], Verdict]:
    def check(r: Outcomes) -> Verdict:
        out = _out(r, probe_id)
        ok = out.shape[-2] > second and _close(out[..., first, :], out[..., second, :], 1e-6)
        return ok, ("identical queries give identical output rows." if ok else
                    f"queries {first} and {second} are identical, so their output rows should be "
                    "identical too.")

    return check


def _near_one_hot(r: Outcomes) -> Verdict:
    probe = r["one-large-score"][0]
    out = _out(r, "one-large-score")
    target = probe.args[2][3]
    ok = _close(out, np.broadcast_to(target, out.shape), 1e-3)
    return ok, ("one dominant score gives (almost) all the weight to that key." if ok else
                f"key 3 scores far above the rest, so each output row should be (almost) its "
                f"value {target.tolist()}; got {np.round(out, 4).tolist()}.")


def _finite_for_large(r: Outcomes) -> Verdict:
    out = _out(r, "large-logits")
    ok = bool(np.all(np.isfinite(out)))
    return ok, ("scores around 1e4 still give finite results." if ok else
                "with scores around 1e4 your result contains NaN or inf; subtract each row's "
                "maximum before exponentiating (softmax is shift-invariant).")


def _shape_is(probe_id: str, expected: Callable[[Probe], tuple[int, ...]]
              ) -> Callable[[Outcomes], Verdict]:
    def check(r: Outcomes) -> Verdict:
        probe = r[probe_id][0]
        got, want = tuple(_out(r, probe_id).shape), expected(probe)
        return got == want, (f"output shape {got} is right for these inputs." if got == want else
                             f"output shape {got}, expected {want}.")

    return check


def _per_head_scale(r: Outcomes) -> Verdict:
    import reference

    probe = r["per-head-scale"][0]
    out = _out(r, "per-head-scale")
    x_q, x_kv, heads = probe.args[0], probe.args[1], probe.args[6]
    d_k = x_q.shape[-1] // heads
    pieces = [reference.scaled_dot_product_attention(x_q[:, h * d_k:(h + 1) * d_k],
                                                     x_kv[:, h * d_k:(h + 1) * d_k],
                                                     x_kv[:, h * d_k:(h + 1) * d_k])[0]
              for h in range(heads)]
    ok = _close(out, np.concatenate(pieces, axis=-1))
    return ok, ("with identity projections each head is attention on its own feature slice, "
                "scaled by its own sqrt(d_k)." if ok else
                "with identity projections head h should be attention on features "
                "[h*d_k, (h+1)*d_k) with its own 1/sqrt(d_k); your output is not.")


def _softmax_sums(r: Outcomes) -> Verdict:
    for probe_id in ("matrix", "matrix-axis0", "tensor-axis1"):
        probe = r[probe_id][0]
        out = _out(r, probe_id)
        axis = probe.args[1] if len(probe.args) > 1 else -1
        if out.shape != probe.args[0].shape or not np.allclose(out.sum(axis=axis), 1.0,
                                                               atol=1e-3) or out.min() < -ATOL:
            return False, (f"on test input '{probe_id}' the slices along axis={axis} should be "
                           "non-negative and sum to 1.")
    return True, "the slices along the requested axis are distributions."


def _softmax_shift(r: Outcomes) -> Verdict:
    ok = _close(_out(r, "matrix"), _out(r, "shifted"), 1e-6)
    return ok, ("adding 100 to every entry leaves the softmax unchanged." if ok else
                "softmax is shift-invariant: softmax(x + 100) must equal softmax(x).")


def _softmax_uniform(r: Outcomes) -> Verdict:
    out = _out(r, "uniform-row")
    ok = out.shape == (3, 4) and _close(out[1], np.full(4, 0.25))
    return ok, ("a row of equal entries gives uniform weights 1/4." if ok else
                "a row of equal entries must give uniform weights (0.25 each here).")


def _softmax_single(r: Outcomes) -> Verdict:
    out = _out(r, "single-entry")
    ok = _close(out, np.ones((3, 1)))
    return ok, ("a slice of length 1 gets weight 1." if ok else
                "a slice with a single entry must get weight exactly 1.")


SOFTMAX_CONCEPTS: tuple[Concept, ...] = (
    Concept("sums-to-one", "Each slice along the axis is a distribution", ("A-tf-2", "B-2"),
            ("matrix", "matrix-axis0", "tensor-axis1"), _softmax_sums),
    Concept("shift-invariance", "Softmax is shift-invariant", ("B-10",),
            ("matrix", "shifted"), _softmax_shift),
    Concept("uniform-for-equal-scores", "Equal entries give uniform weights",
            ("A-edge-5", "B-24"), ("uniform-row",), _softmax_uniform),
    Concept("single-entry", "A single entry gets weight 1", ("B-26",), ("single-entry",),
            _softmax_single),
    Concept("large-logits-finite", "Large inputs give finite results", ("B-10", "A-edge-2"),
            ("large-logits",), _finite_for_large),
)


ATTENTION_CONCEPTS: tuple[Concept, ...] = (
    Concept("weights-are-distributions", "Each query's weights sum to 1",
            ("A-tf-2", "B-2"), ("weights",), _weights_are_distributions),
    Concept("scaling-keeps-argmax", "Scaling keeps the most-attended key",
            ("A-tf-5", "B-1"), ("weights",), _argmax_kept),
    Concept("masked-keys-zero-weight", "Masked keys get zero weight",
            ("A-edge-6", "B-30", "B-15"), ("weights-masked",), _masked_zero),
    Concept("masked-keys-no-influence", "Masked keys do not influence the output",
            ("A-edge-6", "B-30"), ("padding", "padding-changed"), _padding_ignored),
    Concept("permutation-equivariance", "Attention is permutation-equivariant",
            ("A-tf-4", "B-23"), ("cross", "permuted"), _permutation),
    Concept("identical-keys-uniform", "Identical keys give the mean of the values",
            ("A-edge-1", "B-3", "B-24"), ("identical-keys",),
            _rows_equal_mean("identical-keys")),
    Concept("single-key", "A single key returns its value", ("A-edge-3", "B-26"),
            ("single-key",), _single_key),
    Concept("zero-query", "A zero query averages the values", ("B-28", "A-edge-5"),
            ("zero-query",), _rows_equal_mean("zero-query", [1])),
    Concept("identical-queries", "Identical queries give identical rows",
            ("B-29", "A-edge-4"), ("identical-queries",), _identical_rows("identical-queries", 0, 2)),
    Concept("one-large-score", "One dominant score gives a near one-hot result",
            ("A-edge-2", "B-10"), ("one-large-score",), _near_one_hot),
    Concept("large-logits-finite", "Large scores give finite results", ("B-10", "A-edge-2"),
            ("large-logits",), _finite_for_large),
    Concept("cross-attention-shape", "The output is n x d_v", ("B-6", "B-12", "B-22"),
            ("cross",), _shape_is("cross", lambda p: (p.args[0].shape[0], p.args[2].shape[1]))),
)


MULTI_HEAD_CONCEPTS: tuple[Concept, ...] = (
    Concept("per-head-scale", "Each head attends in its own slice with its own sqrt(d_k)",
            ("B-16", "A-err-7", "A-tf-9"), ("per-head-scale",), _per_head_scale),
    Concept("permutation-equivariance", "Attention is permutation-equivariant",
            ("A-tf-4", "B-23"), ("cross", "permuted"), _permutation),
    Concept("identical-queries", "Identical queries give identical rows",
            ("B-29", "A-edge-4"), ("identical-queries",), _identical_rows("identical-queries", 0, 2)),
    Concept("masked-keys-no-influence", "Masked keys do not influence the output",
            ("A-edge-6", "B-30"), ("padding", "padding-changed"), _padding_ignored),
    Concept("large-logits-finite", "Large scores give finite results", ("B-10", "A-edge-2"),
            ("large-logits",), _finite_for_large),
    Concept("cross-attention-shape", "The output is n x d_model, whatever m is",
            ("B-22", "A-tf-7"), ("cross",), _shape_is("cross", lambda p: p.args[0].shape)),
)


def evaluate(checks: tuple[Concept, ...], results: Outcomes) -> list[tuple[Concept, bool, str]]:
    """Run every concept check of a task on the outcomes (keyed by probe id)."""
    verdicts = []
    for concept in checks:
        failed = [p for p in concept.needs if p not in results or not results[p][1].ok]
        if failed:
            outcome = results[failed[0]][1] if failed[0] in results else None
            why = outcome.message.splitlines()[-1] if outcome and outcome.message else "no output"
            verdicts.append((concept, False, f"the call on test input '{failed[0]}' failed: {why}"))
            continue
        try:
            passed, message = concept.check(results)
        except (ValueError, IndexError, TypeError) as exc:
            passed, message = False, f"the output could not be checked ({exc})."
        verdicts.append((concept, passed, message))
    return verdicts
