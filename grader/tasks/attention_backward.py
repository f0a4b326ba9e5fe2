"""The ``attention_backward`` task (the gradients of scaled dot-product attention): its probes,
its conceptual checks and the sizes its evidence sentences quote.

The probes break the coincidences that hide backward mistakes (SPEC, "IDs of the backward
pass"): random, non-uniform upstream gradients; n != m with d_k != d_v, and n = m (where P dO
and dS Q run at all); m = d_k (Q K runs); masks with blocked keys, 2-D masks on batched inputs
and a key blocked for every query; large logits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grader.core.concepts import ATOL, Concept, Outcomes, Verdict, close
from grader.core.probes import STABILITY_OFFSET, UNDERFLOW_OFFSETS, Maker, new_probe, offset_scores
from grader.core.tasks import Recipe, Task
from grader.model import Array, Probe
from grader.tasks.attention import attention_sizes
from reference.tasks import attention_backward
from reference.tasks.attention import scaled_dot_product_attention

#: the finite-difference check (CONTRACT.md): the directional derivative of
#: L = sum(O * grad_output) along a random direction, by central differences with this step,
#: must agree with the returned gradients within FD_RTOL times the sum of |gradient x direction|
#: (at least FD_RTOL)
FD_STEP = 1e-5
FD_RTOL = 1e-4


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid

    def call(n: int, m: int, d_k: int, d_v: int, *lead: int) -> tuple[Array, ...]:
        return g(*lead, n, d_v), g(*lead, n, d_k), g(*lead, m, d_k), g(*lead, m, d_v)

    stable_q, stable_k = offset_scores(
        make, 3, 5, 4, STABILITY_OFFSET + np.array([0.0, 2.0, -3.0]))
    spread_q, spread_k = offset_scores(make, 3, 5, 4, np.array(UNDERFLOW_OFFSETS))
    blocked = make.padding_mask(3, 5)
    pair = call(3, 5, 4, 2)
    other_values = g(5, 2)
    return [
        new_probe("basic", call(3, 5, 4, 2), "unbatched", bank=("B-6", "B-12"), repeat=True,
                  traced=True),
        new_probe("cross", call(3, 7, 6, 2), "unbatched", bank=("B-6", "B-12", "B-22")),
        new_probe("square", call(4, 4, 3, 2), "unbatched", "coincidence", bank=("B-12", "B-14"),
                  traced=True),
        new_probe("square-keys", call(3, 4, 4, 2), "unbatched", "coincidence",
                  bank=("A-err-2", "B-12")),
        new_probe("batched", call(3, 5, 4, 3, 2), "batched", bank=("B-20",)),
        new_probe("batched-heads", call(2, 4, 5, 2, 2, 3), "batched", bank=("B-20",)),
        new_probe("square-batched", call(4, 4, 4, 3, 2), "batched", "coincidence",
                  bank=("B-12", "B-14")),
        # d_k = d_v: where a blend of the keys (O = P K) runs at all
        new_probe("same-widths", call(3, 5, 3, 3), "unbatched", "coincidence", bank=("B-21",)),
        new_probe("same-widths-masked", (*call(3, 5, 3, 3), make.mask(3, 5)), "unbatched",
                  "masked", "coincidence", bank=("B-21", "A-edge-6")),
        new_probe("masked", (*call(3, 5, 4, 2), make.mask(3, 5)), "unbatched", "masked",
                  bank=("A-edge-6", "B-30"), traced=True),
        new_probe("square-masked", (*call(4, 4, 3, 2), make.mask(4, 4)), "unbatched", "masked",
                  "coincidence", bank=("A-edge-6", "B-14")),
        new_probe("square-keys-masked", (*call(3, 4, 4, 2), make.mask(3, 4)), "unbatched",
                  "masked", "coincidence", bank=("A-err-2", "B-12")),
        new_probe("masked-batched", (*call(3, 5, 4, 3, 2), make.mask(2, 3, 5)), "batched",
                  "masked", bank=("A-edge-6", "B-20")),
        new_probe("masked-broadcast", (*call(3, 5, 4, 3, 2), make.mask(3, 5)), "batched",
                  "masked", bank=("A-edge-6", "B-20")),
        new_probe("large-logits", (g(3, 2), stable_q, stable_k, g(5, 2)), "unbatched", "large",
                  bank=("B-10", "A-edge-2")),
        new_probe("far-apart-rows", (g(3, 2), spread_q, spread_k, g(5, 2)), "unbatched",
                  "large", bank=("B-10",)),
        new_probe("blocked-key", (*call(3, 5, 4, 2), blocked), "unbatched", "masked", "concept",
                  "prefix", bank=("A-edge-6", "B-30")),
        new_probe("values", pair, "unbatched", "concept", bank=("B-21", "B-6")),
        new_probe("values-changed", (*pair[:3], other_values), "unbatched", "concept",
                  bank=("B-21", "B-6")),
    ]


def gradient(r: Outcomes, probe_id: str, name: str) -> Array | None:
    """The gradient ``name`` the call on ``probe_id`` returned (float64), or None."""
    value = r[probe_id][1].returned(name)
    return None if value is None else np.asarray(value, dtype=np.float64)


def _blocked_key_zero(r: Outcomes) -> Verdict:
    probe = r["blocked-key"][0]
    blocked_key = int(np.flatnonzero(~probe.args[4].any(axis=0))[0])
    for name in ("dK", "dV"):
        grad = gradient(r, "blocked-key", name)
        if grad is None or grad.shape != probe.args[2 if name == "dK" else 3].shape:
            return False, f"{name} should have the shape of {name[1:]}."
        row = grad[blocked_key]
        if not np.all(np.abs(row) <= ATOL):
            return False, (f"key {blocked_key} is blocked for every query, so it takes no part "
                           f"in the output and its row of {name} should be 0; yours is "
                           f"{np.round(row, 4).tolist()}.")
    return True, "a key blocked for every query gets zero rows in dK and dV."


def _dv_from_weights_only(r: Outcomes) -> Verdict:
    first, second = gradient(r, "values", "dV"), gradient(r, "values-changed", "dV")
    if first is None or second is None:
        return False, "dV should come back as the third gradient."
    ok = close(first, second, 1e-6)
    return ok, ("dV = P^T dO does not depend on V: changing the values leaves it unchanged." if ok
                else "dV = P^T dO depends only on the weights and the upstream gradient, not on "
                "V; with the same Q, K and grad_output but other values your dV changed (largest "
                f"change {np.abs(first - second).max():.4g}).")


def directional_check(forward: Callable[..., Array], inputs: tuple[Array, ...],
                      grads: tuple[Array | None, ...], upstream: Array, seed: int,
                      extra: tuple[object, ...] = ()) -> Verdict:
    """Do the gradients agree with central differences of L = sum(forward(inputs) * upstream)
    along a random direction (``FD_STEP``, ``FD_RTOL``)?"""
    rng = np.random.default_rng(seed)
    directions = [rng.normal(size=x.shape) for x in inputs]
    for grad, x in zip(grads, inputs):
        if grad is None or grad.shape != x.shape or not np.all(np.isfinite(grad)):
            return False, "the gradients must be finite and of the shapes of their arguments."

    def loss(t: float) -> float:
        moved = tuple(x + t * d for x, d in zip(inputs, directions))
        return float(np.sum(forward(*moved, *extra) * upstream))

    numeric = (loss(FD_STEP) - loss(-FD_STEP)) / (2 * FD_STEP)
    terms = [g * d for g, d in zip(grads, directions) if g is not None]
    analytic = float(sum(np.sum(t) for t in terms))
    allowed = FD_RTOL * max(1.0, float(sum(np.abs(t).sum() for t in terms)))
    ok = abs(numeric - analytic) <= allowed
    return ok, ("the gradients agree with finite differences of L = sum(O * grad_output) along a "
                "random direction." if ok else
                "along a random direction, finite differences of L = sum(O * grad_output) give "
                f"{numeric:.6g}, your gradients {analytic:.6g} (allowed difference "
                f"{allowed:.2g}).")


def _finite_differences(r: Outcomes) -> Verdict:
    for probe_id in ("basic", "masked"):
        probe = r[probe_id][0]
        d_o, q, k, v, *mask = probe.args
        grads = tuple(gradient(r, probe_id, name) for name in ("dQ", "dK", "dV"))
        ok, message = directional_check(
            lambda a, b, c, *m: scaled_dot_product_attention(a, b, c, *m)[0], (q, k, v),
            grads, d_o, int(probe.meta.get("seed", 0)), tuple(mask))
        if not ok:
            return False, f"on test input '{probe_id}' {message}"
    return True, ("the gradients agree with finite differences of L = sum(O * grad_output) "
                  "along a random direction.")


def _shapes(r: Outcomes) -> Verdict:
    probe = r["cross"][0]
    for name, argument in zip(("dQ", "dK", "dV"), probe.args[1:4]):
        grad = gradient(r, "cross", name)
        if grad is None or grad.shape != argument.shape:
            return False, (f"{name} should have the shape of {name[1:]}, "
                           f"{tuple(argument.shape)}; got "
                           f"{None if grad is None else tuple(grad.shape)}.")
    return True, "dQ, dK and dV have the shapes of Q, K and V."


CONCEPTS: tuple[Concept, ...] = (
    Concept("blocked-key-zero-gradient", "A key blocked for every query gets no gradient",
            ("A-edge-6", "B-30"), ("blocked-key",), _blocked_key_zero),
    Concept("dv-from-weights-only", "dV depends on the weights and grad_output only",
            ("B-21", "B-6"), ("values", "values-changed"), _dv_from_weights_only),
    Concept("finite-differences", "The gradients agree with finite differences",
            ("B-17",), ("basic", "masked"), _finite_differences),
    Concept("gradient-shapes", "Each gradient has the shape of its argument",
            ("B-6", "B-12"), ("cross",), _shapes),
)


def _fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    _, q, k, v = probe.args[:4]
    d_k = q.shape[-1]
    return attention_sizes(q, d_k, v.shape[-1], q.shape[-2], k.shape[-2], 1, d_k, recipe)


STAGE_WORDS = {
    "dP": "the gradient of the weights (dP)",
    "rowsum": "the row sum the softmax's gradient subtracts", "dS": "the gradient of the scores (dS)",
    "dS_scaled": "dS with the chain rule's scale", "dV": "the gradient of V (dV)",
    "dQ": "the gradient of Q (dQ)", "dK": "the gradient of K (dK)",
}

TASK = Task("attention_backward", attention_backward.reference, attention_backward.pipeline,
            make_probes, CONCEPTS, _fields, stage_words=STAGE_WORDS,
            diagnosed=("dQ", "dK", "dV"))
