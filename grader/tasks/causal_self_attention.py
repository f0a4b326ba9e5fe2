"""The ``causal_self_attention`` task: its probes (one, two and four heads, with and without
RoPE, a sequence length different from d_k, d_model and the number of heads), its conceptual
checks and how its evidence is told (in the sizes of ``grader.tasks.attention``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.core.concepts import Concept, Outcomes, Verdict, close, output_of
from grader.core.probes import (
    STABILITY_OFFSET,
    STANDS_IN,
    UNDERFLOW_OFFSETS,
    Maker,
    new_probe,
    projection_weights,
)
from grader.core.tasks import Recipe, Task
from grader.model import Array, Probe
from grader.registry import Interface
from grader.tasks.attention import attention_sizes, projection_words
from reference.tasks import causal_self_attention


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid
    w8, w12, w16 = (projection_weights(make, d) for d in (8, 12, 16))
    later = g(5, 8)
    changed = later.copy()
    changed[-1] = g(8) + 1.0
    # identity W_q, W_k: the last feature of each (4-wide) head carries a huge query score
    big = g(3, 8) * 0.5
    for head in range(2):
        big[:, 4 * head + 3] = np.sqrt(STABILITY_OFFSET) * np.array([1.0, 1.02, 0.97])
    eye = np.eye(8)
    # rows far apart: W_k reads feature 2 (always 1) into the last feature of each head, where
    # the queries carry 0, -1500, -3000 (times sqrt(d_k)): row i's scores sit near its offset
    apart = g(3, 8) * 0.1
    w_k_apart = eye.copy()
    for head in range(2):
        apart[:, 4 * head + 2] = 1.0
        apart[:, 4 * head + 3] = np.array(UNDERFLOW_OFFSETS) * 2.0
        w_k_apart[:, 4 * head + 3] = eye[4 * head + 2]
    probes = [
        new_probe("far-apart-rows", (apart, eye, w_k_apart, w8[2], w8[3], 2), "unbatched",
                  "large", bank=("B-10",)),
        new_probe("two-heads", (g(5, 8), *w8, 2), "unbatched", bank=("A-edge-6",), traced=True,
                  repeat=True),
        new_probe("four-heads", (g(6, 16), *w16, 4), "unbatched", bank=("A-edge-6", "B-16")),
        new_probe("one-head", (g(3, 12), *w12, 1), "unbatched", bank=("A-edge-6",)),
        new_probe("rope", (g(5, 8), *w8, 2, 10000.0), "unbatched", "rope", bank=("A-why-6",),
                  traced=True),
        new_probe("rope-small-theta", (g(6, 12), *w12, 2, 100.0), "unbatched", "rope",
                  bank=("A-why-6",)),
        new_probe("rope-four-heads", (g(5, 16), *w16, 4, 1000.0), "unbatched", "rope",
                  bank=("A-why-6", "A-err-7")),
        new_probe("batched", (g(2, 5, 8), *w8, 2), "batched", bank=("B-20",)),
        new_probe("batched-rope", (g(2, 4, 16), *w16, 4, 500.0), "batched", "rope",
                  bank=("B-20",)),
        new_probe("key-square", (g(4, 8), *w8, 2), "unbatched", "coincidence",
                  bank=("A-err-2",)),
        new_probe("large-logits", (big, eye, eye, w8[2], w8[3], 2), "unbatched", "large",
                  bank=("B-10", "A-edge-2")),
        new_probe("future-a", (later, *w8, 2), "unbatched", "concept", "no-diagnosis",
                  bank=("A-edge-6", "A-tf-1")),
        new_probe("future-b", (changed, *w8, 2), "unbatched", "concept", "no-diagnosis",
                  bank=("A-edge-6", "A-tf-1")),
        new_probe("single-token", (g(1, 8), *w8, 2), "unbatched", "concept",
                  bank=("A-edge-3",)),
    ]
    # the same checks where the interface always applies RoPE (CS336's adapter): the same
    # inputs with a theta, run only where the probes above cannot be
    return probes + [new_probe(f"{p.id}-rope", (*p.args, 10000.0), *p.tags, "rope",
                               f"{STANDS_IN}{p.id}", bank=p.question_bank)
                     for p in probes[-3:]]


def _future_unseen(r: Outcomes) -> Verdict:
    a, b = output_of(r, "future-a"), output_of(r, "future-b")
    if a.shape != b.shape or a.ndim != 2:
        return False, f"the outputs should be (n, d_model); got {a.shape} and {b.shape}."
    ok = close(a[:-1], b[:-1], 1e-6)
    return ok, ("changing the last token changes no earlier output: no position sees the "
                "future." if ok else
                "changing only the last token changed earlier outputs: some position attends to "
                "a later one. A causal model must never see the future.")


def _single_token(r: Outcomes) -> Verdict:
    probe = r["single-token"][0]
    x, w_v, w_o = probe.args[0], probe.args[3], probe.args[4]  # (RoPE or not: position 0)
    out = output_of(r, "single-token")
    expected = x @ w_v @ w_o
    ok = close(out, expected, 1e-6)
    return ok, ("a sequence of one token attends to itself alone: its output is its own "
                "value, projected." if ok else
                "with one token the only key is the token itself, so its weight is 1 and the "
                "output is (x W_v) W_o; yours is not.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("future-unseen", "Changing a later token changes no earlier output",
            ("A-edge-6", "A-tf-1"), ("future-a", "future-b"), _future_unseen),
    Concept("single-token-itself", "A single token attends to itself", ("A-edge-3",),
            ("single-token",), _single_token),
)


def _causal_self_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    x = probe.args[0]
    d_model, heads = x.shape[-1], probe.args[5]
    d_k = d_model // heads
    n = x.shape[-2]
    return {**attention_sizes(x, d_k, d_k, n, n, heads, d_model, recipe),
            "projection": projection_words(recipe)}


def _rows_without_keys(recipe: Recipe, probe: Probe) -> Array | None:
    return causal_self_attention.rows_without_keys(recipe, probe.args[0].shape[-2])


def unexpressible(interface: Interface, canonical: dict[str, Any],
                  parameters: tuple[str, ...]) -> str | None:
    """RoPE where the course's code takes no theta, or none where it always applies RoPE (a
    theta fixed in the code is switched on and off by ``rope_on``, where it is received)."""
    switch = interface.receives("rope_on") or "rope_on" in parameters
    takes_theta = interface.receives("theta") or "theta" in parameters or switch or \
        interface.theta is not None
    if canonical.get("theta") is not None and not takes_theta:
        return "the interface takes no theta (no RoPE)"
    if canonical.get("theta") is None and takes_theta and not switch and \
            not interface.canonical_for("causal_self_attention"):
        return "the interface always applies RoPE"
    return None


STAGE_WORDS = {"causal_mask": "the causal mask"}


TASK = Task("causal_self_attention", causal_self_attention.reference,
            causal_self_attention.pipeline, make_probes, CONCEPTS, _causal_self_fields,
            unknown_rows=_rows_without_keys, stage_words=STAGE_WORDS,
            unexpressible=unexpressible)
