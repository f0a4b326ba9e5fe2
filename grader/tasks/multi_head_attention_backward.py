"""The ``multi_head_attention_backward`` task (the six gradients of multi-head attention): its
probes, its conceptual checks and the sizes its evidence sentences quote.

The probes break the coincidences that hide backward mistakes (SPEC, "IDs of the backward
pass"): random, non-uniform upstream gradients; random, non-symmetric weights (so a transposed
weight gradient shows); n != m and n = m; several heads with d_k >= 2; leading axes (weight
gradients summed over them); the same array as X_q and X_kv as well as different ones; masks
with a key blocked for every query.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grader.core.concepts import ATOL, Concept, Outcomes, Verdict, close
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
from grader.tasks.attention_backward import directional_check, gradient
from reference.tasks import multi_head_attention_backward as mha_backward
from reference.tasks.multi_head_attention import multi_head_attention

D_MODEL = 12
GRADIENTS = mha_backward.OUTPUTS


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid
    w = projection_weights(make, D_MODEL)
    eye = np.eye(D_MODEL)

    def call(x_q: Array, x_kv: Array, heads: int, *mask: Array,
             weights: tuple[Array, ...] = w) -> tuple[object, ...]:
        return (g(*x_q.shape), x_q, x_kv, *weights, heads, *mask)

    def pair(n: int, m: int, *lead: int) -> tuple[Array, Array]:
        return g(*lead, n, D_MODEL), g(*lead, m, D_MODEL)

    def offsets_pair(offsets: Array) -> tuple[Array, Array]:
        # identity W_q, W_k: per head (6 features each) the last feature carries the offset
        x_q, x_kv = g(3, D_MODEL) * 0.5, g(5, D_MODEL) * 0.5
        for head in range(2):
            x_kv[:, 6 * head + 5] = 1.0
            x_q[:, 6 * head + 5] = offsets * np.sqrt(6)
        return x_q, x_kv

    x_self, x_self_batched = g(4, D_MODEL), g(2, 4, D_MODEL)
    stable = offsets_pair(STABILITY_OFFSET + np.array([0.0, 2.0, -3.0]))
    spread = offsets_pair(np.array(UNDERFLOW_OFFSETS))
    values_call = call(*pair(3, 5), 2)
    other_w_v = np.round(make.rng.normal(0, 0.5, (D_MODEL, D_MODEL)), 2)
    values_changed = (*values_call[:5], other_w_v, *values_call[6:])
    return [
        new_probe("cross", call(*pair(3, 5), 2), "unbatched", bank=("B-22", "A-tf-7"),
                  repeat=True, traced=True),
        new_probe("cross-3-heads", call(*pair(3, 5), 3), "unbatched", bank=("B-16",)),
        new_probe("self", call(x_self, x_self, 2), "unbatched", "coincidence",
                  bank=("A-tf-7", "B-22"), traced=True),
        *_self_six(make, call),
        new_probe("square", call(*pair(4, 4), 2), "unbatched", "coincidence",
                  bank=("B-12", "B-14")),
        new_probe("square-keys", call(*pair(3, 6), 2), "unbatched", "coincidence",
                  bank=("A-err-2", "B-12")),
        new_probe("batched", call(*pair(3, 5, 3), 2), "batched", bank=("B-20",)),
        new_probe("batched-2-dims", call(*pair(3, 5, 2, 2), 3), "batched", bank=("B-20",)),
        new_probe("self-batched", call(x_self_batched, x_self_batched, 2), "batched",
                  "coincidence", bank=("B-20", "A-tf-7")),
        new_probe("masked", call(*pair(4, 5), 2, make.mask(4, 5)), "unbatched", "masked",
                  bank=("A-edge-6", "B-30"), traced=True),
        new_probe("square-masked", call(x_self, x_self, 2, make.mask(4, 4)), "unbatched",
                  "masked", "coincidence", bank=("A-edge-6", "B-14")),
        new_probe("masked-batched", call(*pair(4, 5, 3), 2, make.mask(3, 4, 5)), "batched",
                  "masked", bank=("A-edge-6", "B-20")),
        new_probe("masked-broadcast", call(*pair(4, 5, 3), 3, make.mask(4, 5)), "batched",
                  "masked", bank=("A-edge-6", "B-20")),
        new_probe("masked-batch-equals-heads", call(*pair(3, 5, 2), 2, make.mask(2, 3, 5)),
                  "batched", "masked", "coincidence", bank=("A-edge-6",)),
        new_probe("large-logits", call(*stable, 2, weights=(eye, eye, w[2], w[3])),
                  "unbatched", "large", bank=("B-10", "A-edge-2")),
        new_probe("far-apart-rows", call(*spread, 2, weights=(eye, eye, w[2], w[3])),
                  "unbatched", "large", bank=("B-10",)),
        new_probe("blocked-key", call(*pair(3, 5), 2, make.padding_mask(3, 5)), "unbatched",
                  "masked", "concept", "prefix", bank=("A-edge-6", "B-30")),
        new_probe("blocked-key-self", call(x_self, x_self, 3, make.padding_mask(4, 4)),
                  "unbatched", "masked", "concept", "coincidence", "prefix",
                  bank=("A-edge-6", "B-30")),
        new_probe("values", values_call, "unbatched", "concept", bank=("B-21", "B-6")),
        new_probe("values-changed", values_changed, "unbatched", "concept",
                  bank=("B-21", "B-6")),
    ]


def _self_six(make: Maker, call: Callable[..., tuple[object, ...]]) -> list[Probe]:
    """Self-attention on six tokens with three heads (n = m, d_k = 4)."""
    x_six = make.grid(6, D_MODEL)
    return [new_probe("self-3-heads", call(x_six, x_six, 3), "unbatched", "coincidence",
                      bank=("A-tf-7", "B-16"))]


def _blocked_key_zero(r: Outcomes) -> Verdict:
    for probe_id in ("blocked-key", "blocked-key-self"):
        probe = r[probe_id][0]
        blocked = int(np.flatnonzero(~probe.args[8].any(axis=0))[0])
        grad = gradient(r, probe_id, "dX_kv")
        if grad is None or grad.shape != probe.args[2].shape:
            return False, f"on test input '{probe_id}' dX_kv should have the shape of X_kv."
        row = grad[blocked]
        if not np.all(np.abs(row) <= ATOL):
            return False, (f"on test input '{probe_id}' key {blocked} is blocked for every "
                           "query, so its key and value take no part in the output and its row "
                           f"of dX_kv should be 0; yours has entries up to "
                           f"{np.abs(row).max():.4g}.")
    return True, "a key blocked for every query gets a zero row in dX_kv."


def _dw_v_from_weights_only(r: Outcomes) -> Verdict:
    first, second = gradient(r, "values", "dW_v"), gradient(r, "values-changed", "dW_v")
    if first is None or second is None:
        return False, "dW_v should come back as the fifth gradient."
    ok = close(first, second, 1e-6)
    return ok, ("dW_v = X_kv^T dV does not depend on W_v: changing W_v leaves it unchanged."
                if ok else
                "dV = P^T dO depends only on the weights P and the upstream gradient, so "
                "dW_v = X_kv^T dV does not depend on W_v; with another W_v (the same inputs and "
                "other weights) your dW_v changed (largest change "
                f"{np.abs(first - second).max():.4g}).")


def _forward(x_q: Array, x_kv: Array, w_q: Array, w_k: Array, w_v: Array, w_o: Array,
             heads: int, *mask: Array) -> Array:
    return multi_head_attention(x_q, x_kv, w_q, w_k, w_v, w_o, heads, *mask)


def _finite_differences(r: Outcomes) -> Verdict:
    for probe_id in ("cross", "masked"):
        probe = r[probe_id][0]
        d_y, *inputs = probe.args[:7]
        grads = tuple(gradient(r, probe_id, name) for name in GRADIENTS)
        ok, message = directional_check(_forward, tuple(inputs), grads, d_y,
                                        int(probe.meta.get("seed", 0)), tuple(probe.args[7:]))
        if not ok:
            return False, f"on test input '{probe_id}' {message.replace('O *', 'Y *')}"
    return True, ("the six gradients agree with finite differences of L = sum(Y * grad_output) "
                  "along a random direction.")


def _self_attention_total(r: Outcomes) -> Verdict:
    """dX_q + dX_kv is the gradient of a self-attention input (finite differences)."""
    probe = r["self"][0]
    d_y, x, _, *weights = probe.args[:7]
    d_x_q, d_x_kv = gradient(r, "self", "dX_q"), gradient(r, "self", "dX_kv")
    if d_x_q is None or d_x_kv is None or d_x_q.shape != x.shape or d_x_kv.shape != x.shape:
        return False, "dX_q and dX_kv should both have the shape of X."
    total = d_x_q + d_x_kv
    heads = int(probe.args[7])

    def self_attention(a: Array, w_q: Array, w_k: Array, w_v: Array, w_o: Array) -> Array:
        return multi_head_attention(a, a, w_q, w_k, w_v, w_o, heads)

    ok, message = directional_check(self_attention, (x,), (total,), d_y,
                                    int(probe.meta.get("seed", 0)), tuple(weights))
    return ok, ("with the same array as X_q and X_kv, dX_q + dX_kv is the gradient of the "
                "self-attention input." if ok else
                "with the same array X passed as X_q and X_kv, dX_q + dX_kv must be the "
                "gradient of self-attention with respect to X (each argument its own paths); "
                f"{message.replace('O *', 'Y *')}")


def _shapes(r: Outcomes) -> Verdict:
    probe = r["cross"][0]
    for name, argument in zip(GRADIENTS, probe.args[1:7]):
        grad = gradient(r, "cross", name)
        if grad is None or grad.shape != argument.shape:
            return False, (f"{name} should have the shape of {name[1:]}, "
                           f"{tuple(argument.shape)}; got "
                           f"{None if grad is None else tuple(grad.shape)}.")
    return True, "each of the six gradients has the shape of its argument."


CONCEPTS: tuple[Concept, ...] = (
    Concept("blocked-key-zero-gradient", "A key blocked for every query gets no gradient",
            ("A-edge-6", "B-30"), ("blocked-key", "blocked-key-self"), _blocked_key_zero),
    Concept("dw-v-from-weights-only", "dW_v does not depend on W_v",
            ("B-21", "B-6"), ("values", "values-changed"), _dw_v_from_weights_only),
    Concept("finite-differences", "The gradients agree with finite differences",
            ("B-17",), ("cross", "masked"), _finite_differences),
    Concept("self-attention-total", "dX_q + dX_kv is the self-attention input's gradient",
            ("A-tf-7", "B-22"), ("self",), _self_attention_total),
    Concept("gradient-shapes", "Each gradient has the shape of its argument",
            ("B-6", "B-8"), ("cross",), _shapes),
)

_WEIGHT_NAMES = ("dW_q", "dW_k", "dW_v", "dW_o")
_THROUGH_NAMES = ("W_q", "W_k", "W_v", "W_o")
_HEAD_STEPS = {
    "reshape_split": "backward splits dC into heads",
    "reshape_merge": "backward merges the heads' dQ, dK and dV back",
    "reshape_both": "backward splits dC into heads and merges the heads' dQ, dK and dV back",
}


def _listed(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _which(recipe: Recipe, knob: str, names: tuple[str, ...]) -> str:
    setting = recipe.get(knob, mha_backward.OWN[knob])
    acts_on = mha_backward.ACTS_ON.get(setting, ())
    return _listed(tuple(names[i] for i in acts_on)) if acts_on else "none"


def _fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    x_q, x_kv, heads = probe.args[1], probe.args[2], probe.args[7]
    d_model = x_q.shape[-1]
    d_k = d_model // heads
    kept = recipe.get("dxkv_path", "both")
    return {
        **attention_sizes(x_q, d_k, d_k, x_q.shape[-2], x_kv.shape[-2], heads, d_model, recipe),
        "projection": projection_words(recipe),
        "which_weights": _which(recipe, "weight_grad", _WEIGHT_NAMES),
        "which_weights_dx": _which(recipe, "dx_weight", _THROUGH_NAMES),
        "heads_step": _HEAD_STEPS.get(recipe.get("backward_heads", ""), "backward"),
        "kept_path": "the V path (dV W_v^T)" if kept == "v_only" else "the K path (dK W_k^T)",
        "missing_path": "K path (dK W_k^T)" if kept == "v_only" else "V path (dV W_v^T)",
    }


STAGE_WORDS = {
    "dC": "the gradient of the merged heads (dC = dY W_o^T)",
    "dC_heads": "dC split into heads",
    "dQ_merged": "the heads' dQ merged back", "dK_merged": "the heads' dK merged back",
    "dV_merged": "the heads' dV merged back",
    "dX_q": "the gradient of X_q (dX_q)", "dX_kv": "the gradient of X_kv (dX_kv)",
    "dW_q": "the gradient of W_q (dW_q)", "dW_k": "the gradient of W_k (dW_k)",
    "dW_v": "the gradient of W_v (dW_v)", "dW_o": "the gradient of W_o (dW_o)",
}

TASK = Task("multi_head_attention_backward", mha_backward.reference, mha_backward.pipeline,
            make_probes, CONCEPTS, _fields, stage_words=STAGE_WORDS, diagnosed=GRADIENTS)
