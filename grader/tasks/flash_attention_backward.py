"""The ``flash_attention_backward`` task (tiled attention's backward, SPEC section 1): its
probes (the forward's shapes and tile sizes, each with the reference O and L and a random
upstream gradient), its conceptual checks (finite differences, tile sizes that change nothing)
and the sizes its evidence sentences quote."""

from __future__ import annotations

import dataclasses

from grader.core.concepts import Concept, Outcomes, Verdict, close
from grader.core.probes import Maker, new_probe
from grader.core.tasks import Recipe, Task
from grader.model import Array, Probe
from grader.tasks import flash_attention_forward as forward_task
from grader.tasks.attention_backward import directional_check, gradient
from reference.tasks import flash_attention_backward as flash
from reference.tasks.flash_attention_forward import flash_attention_forward, flash_attention_tiled


def _with_forward(make: Maker, pid: str, q: Array, k: Array, v: Array, *extra: object,
                  tags: tuple[str, ...], bank: tuple[str, ...], repeat: bool = False,
                  traced: bool = False) -> Probe:
    """A probe of the backward: a random upstream gradient, Q, K, V, the reference O and L for
    them, then the causal flag and the block sizes given (``extra``)."""
    causal = bool(extra[0]) if extra else False
    out, lse = flash_attention_forward(q, k, v, causal)
    d_o = make.rng.normal(size=out.shape)
    return new_probe(pid, (d_o, q, k, v, out, lse, *extra), *tags, bank=bank, repeat=repeat,
                     traced=traced)


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid
    later_q, later_k = forward_task.later_maximum(make, 6, 20, 6)
    big_q, big_k = forward_task.large_logits(make, 5, 10, [forward_task.LARGE_LOGIT, 0.0,
                                                           forward_task.LARGE_LOGIT + 0.5,
                                                           0.0, -3.0])
    same = (g(9, 4), g(11, 4), g(11, 3))
    blocks_a = _with_forward(make, "blocks-a", *same, False, 16, 16,
                             tags=("unbatched", "concept"), bank=("B-2",))

    def probe(pid: str, q: Array, k: Array, v: Array, *extra: object, tags: tuple[str, ...],
              bank: tuple[str, ...], repeat: bool = False, traced: bool = False) -> Probe:
        return _with_forward(make, pid, q, k, v, *extra, tags=tags, bank=bank, repeat=repeat,
                             traced=traced)

    return [
        probe("single-tile", g(5, 4), g(7, 4), g(7, 3), tags=("unbatched", "single-tile"),
              bank=("B-6", "B-12"), repeat=True, traced=True),
        probe("remainder-tiles", g(37, 4), g(45, 4), g(45, 3), False, 16, 16,
              tags=("unbatched", "remainder"), bank=("B-20",), traced=True),
        probe("uneven-blocks", g(12, 4), g(17, 4), g(17, 3), False, 8, 5,
              tags=("unbatched", "remainder"), bank=("B-6",)),
        probe("uneven-blocks-more-queries", g(13, 4), g(9, 4), g(9, 2), False, 5, 8,
              tags=("unbatched", "remainder"), bank=("B-6", "B-12")),
        probe("tiles-of-one", g(4, 3), g(6, 3), g(6, 2), False, 1, 1, tags=("unbatched",),
              bank=("B-2",)),
        probe("one-query", g(1, 4), g(17, 4), g(17, 3), tags=("unbatched", "remainder"),
              bank=("A-edge-3",)),
        probe("later-maximum", later_q, later_k, g(20, 3), False, 4, 6,
              tags=("unbatched", "later-max", "remainder"), bank=("B-10", "B-2")),
        probe("large-logits", big_q, big_k, g(10, 3), False, 2, 4, tags=("unbatched", "large"),
              bank=("B-10", "A-edge-2")),
        probe("causal-square", g(19, 4), g(19, 4), g(19, 3), True, 4, 6,
              tags=("unbatched", "causal"), bank=("A-edge-6",), traced=True),
        probe("causal-cached", g(9, 4), g(21, 4), g(21, 3), True, 4, 8,
              tags=("unbatched", "causal"), bank=("A-edge-6",)),
        probe("causal-single-tile", g(5, 4), g(8, 4), g(8, 3), True,
              tags=("unbatched", "causal", "single-tile"), bank=("A-edge-6",)),
        probe("causal-tiles-of-one", g(4, 3), g(6, 3), g(6, 2), True, 1, 1,
              tags=("unbatched", "causal"), bank=("A-edge-6",)),
        probe("causal-batched", g(2, 6, 4), g(2, 11, 4), g(2, 11, 3), True, 3, 4,
              tags=("batched", "causal"), bank=("A-edge-6", "B-20")),
        probe("batched-heads", g(2, 3, 10, 4), g(2, 3, 12, 4), g(2, 3, 12, 3), False, 4, 5,
              tags=("batched",), bank=("B-20",)),
        probe("batched", g(2, 9, 4), g(2, 7, 4), g(2, 7, 3), False, 4, 3, tags=("batched",),
              bank=("B-20",)),
        blocks_a,  # (and the same call, upstream gradient included, with other tiles:)
        new_probe("blocks-b", (*blocks_a.args[:6], False, 3, 5), "unbatched", "concept",
                  "remainder", bank=("B-2",)),
    ]


GRADIENTS = ("dQ", "dK", "dV")


def _blocks_change_nothing(r: Outcomes) -> Verdict:
    for name in GRADIENTS:
        a, b = gradient(r, "blocks-a", name), gradient(r, "blocks-b", name)
        if a is None or b is None or not close(a, b, 1e-6):
            return False, (f"the same inputs give a different {name} with 16 x 16 and 3 x 5 "
                           "tiles: tiling is a way to compute the gradients, it must not change "
                           "them.")
    return True, "the same inputs give the same gradients with 16 x 16 and 3 x 5 tiles."


def _finite_differences(r: Outcomes) -> Verdict:
    for probe_id in ("uneven-blocks", "causal-cached"):
        probe = r[probe_id][0]
        d_o, q, k, v, _, _, *extra = probe.args
        grads = tuple(gradient(r, probe_id, name) for name in GRADIENTS)
        causal = bool(extra[0]) if extra else False
        ok, message = directional_check(
            lambda a, b, c, masked=causal: flash_attention_forward(a, b, c, masked)[0],
            (q, k, v), grads, d_o,
            int(probe.meta.get("seed", 0)))
        if not ok:
            return False, f"on test input '{probe_id}' {message}"
    return True, ("the gradients agree with finite differences of sum(O * grad_output) along a "
                  "random direction, with and without the causal mask.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("finite-differences", "The gradients agree with finite differences",
            ("B-17",), ("uneven-blocks", "causal-cached"), _finite_differences),
    Concept("tiles-change-nothing", "Tile sizes do not change the gradients", ("B-2",),
            ("blocks-a", "blocks-b"), _blocks_change_nothing),
)


def forward_view(probe: Probe) -> Probe:
    """The probe as the forward's call (Q, K, V, causal, block_q, block_k)."""
    return dataclasses.replace(probe, args=(*probe.args[1:4], *probe.args[6:]))


def _fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    return forward_task.flash_fields(forward_view(probe), flash.read_d_form(recipe)[0])


STAGE_WORDS = {
    "P": "the weights P recomputed from L", "dS": "the gradient of the scores (dS)",
    "dQ": "the gradient of Q (dQ)", "dK": "the gradient of K (dK)",
    "dV": "the gradient of V (dV)", "D": "D = rowsum(dO * O)",
}

def tiling_call(make: Maker, length: int, width: int, block: int) -> Probe:
    """The tiling check's call: n = m = ``length``, d = d_v = ``width``, square tiles of
    ``block``, non-causal, with the reference O and L (computed tile by tile) and a random
    upstream gradient."""
    q, k, v = (make.rng.normal(size=(length, width)) for _ in range(3))
    out, lse = flash_attention_tiled(q, k, v, False, block, block)
    d_o = make.rng.normal(size=out.shape)
    return new_probe("tiling", (d_o, q, k, v, out, lse, False, block, block), "tiling")


TASK = Task("flash_attention_backward", flash.reference, flash.pipeline, make_probes, CONCEPTS,
            _fields, stage_words=STAGE_WORDS, diagnosed=GRADIENTS, tiling_call=tiling_call)
