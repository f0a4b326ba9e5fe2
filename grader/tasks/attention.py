"""The ``attention`` task (scaled dot-product attention): its probes, its conceptual checks,
and the sizes its evidence sentences quote (which multi-head and causal self-attention, built
from it, quote too)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grader.core.concepts import (
    ATOL,
    Concept,
    Outcomes,
    Verdict,
    close,
    finite_for_large,
    identical_rows,
    output_of,
    padding_ignored,
    permutation,
    shape_is,
)
from grader.core.probes import STABILITY_OFFSET, UNDERFLOW_OFFSETS, Maker, new_probe, offset_scores
from grader.core.tasks import Recipe, Task
from grader.model import Array, Probe
from reference import stages
from reference.tasks import attention


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid
    cross = (g(3, 6), g(7, 6), g(7, 2))
    perm_q, perm_kv = make.permutation(3), make.permutation(7)
    stable_q, stable_k = offset_scores(
        make, 3, 5, 4, STABILITY_OFFSET + np.array([0.0, 2.0, -3.0])
    )
    spread_q, spread_k = offset_scores(make, 3, 5, 4, np.array(UNDERFLOW_OFFSETS))
    identical_keys = np.repeat(g(1, 4), 5, axis=0)
    zero_query = g(3, 4)
    zero_query[1] = 0.0
    twin_queries = g(3, 4)
    twin_queries[2] = twin_queries[0]
    aligned_q, aligned_k = g(2, 4), g(5, 4)
    aligned_k[3] = np.array([6.0, 6.0, 6.0, 6.0])
    aligned_q[:] = np.array([2.0, 2.0, 2.0, 2.0])
    padding_mask = make.padding_mask(3, 5)
    pad_q, pad_k, pad_v = g(3, 4), g(5, 4), g(5, 3)
    pad_k2, pad_v2 = pad_k.copy(), pad_v.copy()
    pad_k2[-1], pad_v2[-1] = g(4) + 1.0, g(3) - 1.0
    basic = (g(2, 4), g(5, 4), g(5, 3))
    return [
        new_probe("basic", basic, "unbatched", bank=("B-6", "B-12"), repeat=True, traced=True),
        new_probe("cross", cross, "unbatched", bank=("B-6", "B-12", "B-22")),
        new_probe("batched", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3)), "batched", bank=("B-20",)),
        new_probe("batched-heads", (g(2, 3, 2, 5), g(2, 3, 4, 5), g(2, 3, 4, 2)), "batched",
                  bank=("B-20",)),
        new_probe("masked", (g(3, 4), g(5, 4), g(5, 3), make.mask(3, 5)), "unbatched", "masked",
                  bank=("A-edge-6", "B-30"), traced=True),
        new_probe("masked-batched", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3), make.mask(2, 3, 5)),
                  "batched", "masked", bank=("A-edge-6", "B-20")),
        new_probe("masked-broadcast", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3), make.mask(3, 5)),
                  "batched", "masked", bank=("A-edge-6", "B-20")),
        new_probe("square-masked", (g(4, 3), g(4, 3), g(4, 2), make.mask(4, 4)), "unbatched",
                  "masked", "coincidence", bank=("A-edge-6", "B-14"), traced=True),
        new_probe("square", (g(4, 3), g(4, 3), g(4, 2)), "unbatched", "coincidence",
                  bank=("B-12", "B-14")),
        new_probe("square-keys", (g(3, 4), g(4, 4), g(4, 2)), "unbatched", "coincidence",
                  bank=("A-err-2", "B-12")),
        new_probe("square-keys-masked", (g(3, 4), g(4, 4), g(4, 2), make.mask(3, 4)), "unbatched",
                  "masked", "coincidence", bank=("A-err-2", "B-12"), traced=True),
        new_probe("square-batched", (g(2, 4, 4), g(2, 4, 4), g(2, 4, 3)), "batched", "coincidence",
                  bank=("B-12", "B-14")),
        new_probe("integer-valued", (make.integers(3, 2), make.integers(4, 2), make.integers(4, 3),
                                     make.mask(3, 4)), "unbatched", "masked"),
        new_probe("large-logits", (stable_q, stable_k, g(5, 3)), "unbatched", "large",
                  bank=("B-10", "A-edge-2")),
        new_probe("far-apart-rows", (spread_q, spread_k, g(5, 3)), "unbatched", "large",
                  bank=("B-10",)),
        new_probe("weights", (g(3, 4), g(5, 4), np.eye(5)), "unbatched", "concept",
                  bank=("A-tf-2", "B-2", "A-tf-5", "B-1")),
        new_probe("weights-masked", (g(3, 4), g(5, 4), np.eye(5), make.mask(3, 5)), "unbatched",
                  "masked", "concept", bank=("A-edge-6", "B-30")),
        new_probe("permuted", (cross[0][perm_q], cross[1][perm_kv], cross[2][perm_kv]),
                  "unbatched", "concept", bank=("A-tf-4", "B-23"), source="cross",
                  query_order=perm_q),
        new_probe("identical-keys", (g(3, 4), identical_keys, g(5, 3)), "unbatched", "concept",
                  bank=("A-edge-1", "B-3", "B-24")),
        new_probe("single-key", (g(3, 4), g(1, 4), g(1, 3)), "unbatched", "concept",
                  bank=("A-edge-3", "B-26")),
        new_probe("zero-query", (zero_query, g(5, 4), g(5, 3)), "unbatched", "concept",
                  bank=("B-28", "A-edge-5")),
        new_probe("identical-queries", (twin_queries, g(5, 4), g(5, 3)), "unbatched", "concept",
                  bank=("B-29", "A-edge-4")),
        new_probe("one-large-score", (aligned_q, aligned_k, g(5, 3)), "unbatched", "concept",
                  bank=("A-edge-2", "B-10")),
        new_probe("padding", (pad_q, pad_k, pad_v, padding_mask), "unbatched", "masked", "concept",
                  "no-diagnosis", bank=("A-edge-6", "B-30")),
        new_probe("padding-changed", (pad_q, pad_k2, pad_v2, padding_mask), "unbatched", "masked",
                  "concept", "no-diagnosis", bank=("A-edge-6", "B-30")),
        # diagnosis only (never scored): masks that valid lengths can say, for courses whose
        # interface takes lengths rather than a mask
        new_probe("prefix-masked", (g(3, 4), g(5, 4), g(5, 3), make.prefix_mask(3, 5)), "unbatched",
                  "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-30")),
        new_probe("prefix-masked-batched", (g(2, 3, 4), g(2, 5, 4), g(2, 5, 3),
                                            make.prefix_mask(2, 3, 5)),
                  "batched", "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-20")),
    ]


def _weights_are_distributions(r: Outcomes) -> Verdict:
    w = output_of(r, "weights")
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
    w = output_of(r, "weights")
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
    w = output_of(r, "weights-masked")
    mask = probe.args[3]
    if w.shape != mask.shape:
        return False, f"the weights have shape {w.shape}, expected {mask.shape}."
    leaked = np.abs(w[~mask]).max(initial=0.0)
    if leaked <= ATOL and np.allclose(w.sum(-1), 1.0, atol=1e-3):
        return True, "masked keys get exactly zero weight and each row still sums to 1."
    return False, (f"blocked keys should get zero weight with the rest renormalised; the largest "
                   f"weight on a blocked key is {leaked:.4g}, row sums {np.round(w.sum(-1), 4).tolist()}.")


def _rows_equal_mean(probe_id: str, rows: slice | list[int] | None = None
                     ) -> Callable[[Outcomes], Verdict]:
    def check(r: Outcomes) -> Verdict:
        probe = r[probe_id][0]
        out = output_of(r, probe_id)
        values = probe.args[2]
        selected = out if rows is None else out[rows]
        ok = close(selected, np.broadcast_to(values.mean(axis=0), selected.shape))
        return ok, ("those rows equal the plain mean of the values." if ok else
                    "equal scores give uniform weights, so the output should be the plain mean of "
                    f"the values {np.round(values.mean(axis=0), 4).tolist()}; got "
                    f"{np.round(selected, 4).tolist()}.")

    return check


def _single_key(r: Outcomes) -> Verdict:
    probe = r["single-key"][0]
    out = output_of(r, "single-key")
    value = probe.args[2][0]
    ok = close(out, np.broadcast_to(value, out.shape))
    return ok, ("with one key every query returns that key's value." if ok else
                f"with a single key its weight is 1, so every output row should be "
                f"{value.tolist()}; got {np.round(out, 4).tolist()}.")


def _near_one_hot(r: Outcomes) -> Verdict:
    probe = r["one-large-score"][0]
    out = output_of(r, "one-large-score")
    target = probe.args[2][3]
    ok = close(out, np.broadcast_to(target, out.shape), 1e-3)
    return ok, ("one dominant score gives (almost) all the weight to that key." if ok else
                f"key 3 scores far above the rest, so each output row should be (almost) its "
                f"value {target.tolist()}; got {np.round(out, 4).tolist()}.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("weights-are-distributions", "Each query's weights sum to 1",
            ("A-tf-2", "B-2"), ("weights",), _weights_are_distributions),
    Concept("scaling-keeps-argmax", "Scaling keeps the most-attended key",
            ("A-tf-5", "B-1"), ("weights",), _argmax_kept),
    Concept("masked-keys-zero-weight", "Masked keys get zero weight",
            ("A-edge-6", "B-30", "B-15"), ("weights-masked",), _masked_zero),
    Concept("masked-keys-no-influence", "Masked keys do not influence the output",
            ("A-edge-6", "B-30"), ("padding", "padding-changed"), padding_ignored),
    Concept("permutation-equivariance", "Attention is permutation-equivariant",
            ("A-tf-4", "B-23"), ("cross", "permuted"), permutation),
    Concept("identical-keys-uniform", "Identical keys give the mean of the values",
            ("A-edge-1", "B-3", "B-24"), ("identical-keys",),
            _rows_equal_mean("identical-keys")),
    Concept("single-key", "A single key returns its value", ("A-edge-3", "B-26"),
            ("single-key",), _single_key),
    Concept("zero-query", "A zero query averages the values", ("B-28", "A-edge-5"),
            ("zero-query",), _rows_equal_mean("zero-query", [1])),
    Concept("identical-queries", "Identical queries give identical rows",
            ("B-29", "A-edge-4"), ("identical-queries",), identical_rows("identical-queries", 0, 2)),
    Concept("one-large-score", "One dominant score gives a near one-hot result",
            ("A-edge-2", "B-10"), ("one-large-score",), _near_one_hot),
    Concept("large-logits-finite", "Large scores give finite results", ("B-10", "A-edge-2"),
            ("large-logits",), finite_for_large),
    Concept("cross-attention-shape", "The output is n x d_v", ("B-6", "B-12", "B-22"),
            ("cross",), shape_is("cross", lambda p: (p.args[0].shape[0], p.args[2].shape[1]))),
)


def attention_sizes(q: Array, d_k: int, d_v: int, n: int, m: int, heads: int,
                    d_model: int, recipe: Recipe) -> dict[str, object]:
    dims = stages.Dims(n=n, m=m, d_k=d_k, d_v=d_v, k_shape0=m, k_shape1=d_k,
                       d_model=d_model, num_heads=heads)
    factor = stages.SCALE[recipe.get("scale", stages.CORRECT["scale"])](dims)
    return {
        "weights_sum": f"{factor:.4g}",
        "d_k": d_k, "sqrt_dk": f"{np.sqrt(d_k):.4g}", "inv_sqrt_dk": f"{1 / np.sqrt(d_k):.4g}",
        "d_v": d_v, "sqrt_dv": f"{np.sqrt(d_v):.4g}", "n": n, "m": m,
        "d_model": d_model, "sqrt_dmodel": f"{np.sqrt(d_model):.4g}", "h": heads,
        "sqrt_h": f"{np.sqrt(heads):.4g}", "big": "1e4", "axis": -1,
        "batched_shape": str(tuple(q.shape)),
    }


_MATRIX_NAMES = {"q": "W_q", "k": "W_k", "v": "W_v", "-": "no matrix"}


def projection_words(recipe: Recipe) -> str:
    """Which matrix projects Q, K and V under the recipe ("Q from W_q, K from W_q, ...")."""
    return ", ".join(f"{role} from {_MATRIX_NAMES[c]}"
                     for role, c in zip("QKV", recipe.get("proj_matrices", "qkv")))


def _attention_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    q, k, v = probe.args[:3]
    d_k = q.shape[-1]
    return attention_sizes(q, d_k, v.shape[-1], q.shape[-2], k.shape[-2], 1, d_k, recipe)


TASK = Task("attention", attention.reference, attention.pipeline, make_probes, CONCEPTS,
            _attention_fields)
