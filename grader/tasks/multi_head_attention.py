"""The ``multi_head_attention`` task: its probes, its conceptual checks and how its evidence is
told (in the sizes of ``grader.tasks.attention``, per head)."""

from __future__ import annotations

import numpy as np

from grader.core.concepts import (
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
from grader.core.probes import (
    STABILITY_OFFSET,
    UNDERFLOW_OFFSETS,
    Maker,
    new_probe,
    projection_weights,
)
from grader.core.tasks import Recipe, Task
from grader.model import Array, Probe
from grader.tasks.attention import attention_sizes, projection_words
from reference.tasks import multi_head_attention
from reference.tasks.attention import scaled_dot_product_attention


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid
    w = projection_weights(make)
    eye = np.eye(12)
    x_self = g(4, 12)
    cross = (g(3, 12), g(5, 12))
    perm_q, perm_kv = make.permutation(3), make.permutation(5)
    twin = g(3, 12)
    twin[2] = twin[0]

    def offsets_pair(offsets: Array) -> tuple[Array, Array]:
        # identity W_q, W_k: per head (6 features each) the last feature carries the offset
        x_q, x_kv = g(3, 12) * 0.5, g(5, 12) * 0.5
        for head in range(2):
            x_kv[:, 6 * head + 5] = 1.0
            x_q[:, 6 * head + 5] = offsets * np.sqrt(6)
        return x_q, x_kv

    stable = offsets_pair(STABILITY_OFFSET + np.array([0.0, 2.0, -3.0]))
    spread = offsets_pair(np.array(UNDERFLOW_OFFSETS))
    padding_mask = make.padding_mask(3, 5)
    pad_q, pad_kv = g(3, 12), g(5, 12)
    pad_kv2 = pad_kv.copy()
    pad_kv2[-1] = g(12) + 1.0
    return [
        new_probe("self", (x_self, x_self, *w, 2), "unbatched", bank=("A-tf-7",), repeat=True),
        new_probe("cross", (*cross, *w, 2), "unbatched", bank=("B-22", "A-tf-7"), traced=True),
        new_probe("cross-3-heads", (g(3, 12), g(5, 12), *w, 3), "unbatched", bank=("B-16",)),
        new_probe("batched", (g(3, 4, 12), g(3, 5, 12), *w, 2), "batched", bank=("B-20",)),
        new_probe("batched-2-dims", (g(2, 2, 3, 12), g(2, 2, 5, 12), *w, 3), "batched",
                  bank=("B-20",)),
        new_probe("masked", (g(4, 12), g(5, 12), *w, 2, make.mask(4, 5)), "unbatched", "masked",
                  bank=("A-edge-6", "B-30"), traced=True),
        new_probe("masked-batched", (g(3, 4, 12), g(3, 5, 12), *w, 2, make.mask(3, 4, 5)),
                  "batched", "masked", bank=("A-edge-6", "B-20")),
        new_probe("masked-batch-equals-heads", (g(2, 3, 12), g(2, 5, 12), *w, 2,
                                                make.mask(2, 3, 5)),
                  "batched", "masked", "coincidence", bank=("A-edge-6",)),
        new_probe("square-masked", (x_self, x_self, *w, 2, make.mask(4, 4)), "unbatched", "masked",
                  "coincidence", bank=("A-edge-6", "B-14")),
        new_probe("square", (g(4, 12), g(4, 12), *w, 2), "unbatched", "coincidence",
                  bank=("B-12", "B-14")),
        new_probe("square-keys", (g(3, 12), g(6, 12), *w, 2), "unbatched", "coincidence",
                  bank=("A-err-2", "B-12")),
        new_probe("square-keys-masked", (g(3, 12), g(6, 12), *w, 2, make.mask(3, 6)), "unbatched",
                  "masked", "coincidence", bank=("A-err-2", "B-12")),
        new_probe("square-batched", (g(2, 4, 12), g(2, 4, 12), *w, 3), "batched", "coincidence",
                  bank=("B-12", "B-14")),
        new_probe("large-logits", (*stable, eye, eye, w[2], w[3], 2), "unbatched", "large",
                  bank=("B-10", "A-edge-2")),
        new_probe("far-apart-rows", (*spread, eye, eye, w[2], w[3], 2), "unbatched", "large",
                  bank=("B-10",)),
        new_probe("per-head-scale", (g(3, 12), g(5, 12), eye, eye, eye, eye, 3), "unbatched",
                  "concept", bank=("B-16", "A-err-7", "A-tf-9")),
        new_probe("permuted", (cross[0][perm_q], cross[1][perm_kv], *w, 2), "unbatched", "concept",
                  bank=("A-tf-4", "B-23"), source="cross", query_order=perm_q),
        new_probe("identical-queries", (twin, g(5, 12), *w, 2), "unbatched", "concept",
                  bank=("B-29", "A-edge-4")),
        new_probe("padding", (pad_q, pad_kv, *w, 2, padding_mask), "unbatched", "masked",
                  "concept", "no-diagnosis", bank=("A-edge-6", "B-30")),
        new_probe("padding-changed", (pad_q, pad_kv2, *w, 2, padding_mask), "unbatched",
                  "masked", "concept", "no-diagnosis", bank=("A-edge-6", "B-30")),
        # diagnosis only (never scored): enough self-attention and valid-length inputs that a
        # course restricted to them is diagnosed as strictly as the rest
        new_probe("self-small", (*[g(3, 12)] * 2, *w, 2), "unbatched", "diagnosis-only",
                  bank=("A-tf-7",)),
        new_probe("self-3-heads", (*[g(5, 12)] * 2, *w, 3), "unbatched", "diagnosis-only",
                  bank=("B-16",)),
        new_probe("self-batched", (*[g(2, 4, 12)] * 2, *w, 2), "batched", "diagnosis-only",
                  bank=("B-20",)),
        new_probe("prefix-masked", (g(3, 12), g(5, 12), *w, 2, make.prefix_mask(3, 5)),
                  "unbatched", "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-30")),
        new_probe("prefix-masked-self", (x_self, x_self, *w, 2, make.prefix_mask(4, 4)),
                  "unbatched", "masked", "prefix", "diagnosis-only", bank=("A-edge-6", "B-30")),
    ]


def _per_head_scale(r: Outcomes) -> Verdict:
    probe = r["per-head-scale"][0]
    out = output_of(r, "per-head-scale")
    x_q, x_kv, heads = probe.args[0], probe.args[1], probe.args[6]
    d_k = x_q.shape[-1] // heads
    pieces = [scaled_dot_product_attention(x_q[:, h * d_k:(h + 1) * d_k],
                                           x_kv[:, h * d_k:(h + 1) * d_k],
                                           x_kv[:, h * d_k:(h + 1) * d_k])[0]
              for h in range(heads)]
    ok = close(out, np.concatenate(pieces, axis=-1))
    return ok, ("with identity projections each head is attention on its own feature slice, "
                "scaled by its own sqrt(d_k)." if ok else
                "with identity projections head h should be attention on features "
                "[h*d_k, (h+1)*d_k) with its own 1/sqrt(d_k); your output is not.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("per-head-scale", "Each head attends in its own slice with its own sqrt(d_k)",
            ("B-16", "A-err-7", "A-tf-9"), ("per-head-scale",), _per_head_scale),
    Concept("permutation-equivariance", "Attention is permutation-equivariant",
            ("A-tf-4", "B-23"), ("cross", "permuted"), permutation),
    Concept("identical-queries", "Identical queries give identical rows",
            ("B-29", "A-edge-4"), ("identical-queries",), identical_rows("identical-queries", 0, 2)),
    Concept("masked-keys-no-influence", "Masked keys do not influence the output",
            ("A-edge-6", "B-30"), ("padding", "padding-changed"), padding_ignored),
    Concept("large-logits-finite", "Large scores give finite results", ("B-10", "A-edge-2"),
            ("large-logits",), finite_for_large),
    Concept("cross-attention-shape", "The output is n x d_model, whatever m is",
            ("B-22", "A-tf-7"), ("cross",), shape_is("cross", lambda p: p.args[0].shape)),
)


def _multi_head_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    q, k = probe.args[0], probe.args[1]
    d_model, heads = q.shape[-1], probe.args[6]
    d_k = d_model // heads
    return {**attention_sizes(q, d_k, d_k, q.shape[-2], k.shape[-2], heads, d_model, recipe),
            "projection": projection_words(recipe)}


TASK = Task("multi_head_attention", multi_head_attention.reference,
            multi_head_attention.pipeline, make_probes, CONCEPTS, _multi_head_fields)
