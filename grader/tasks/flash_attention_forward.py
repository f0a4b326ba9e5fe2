"""The ``flash_attention_forward`` task (tiled attention, SPEC section 1): its probes (block
sizes that divide neither length, uneven and unit tiles, a single tile, later key tiles that
hold every row's maximum, logits far below zero and far above it, causal with n = m and n < m,
leading axes), its conceptual checks, and the rows its variants cannot define."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from grader.core.concepts import Concept, Outcomes, Verdict, close, output_of
from grader.core.probes import DIAGNOSIS_ONLY, STANDS_IN, TILE_SIZED, Maker, new_probe
from grader.core.tasks import Recipe, Task
from grader.model import SET_ASIDE, Array, CallOutcome, Probe
from grader.tasks.attention import attention_sizes
from reference.stages import choice
from reference.tasks import flash_attention_forward as flash

#: the scaled logits of row i on the far-below probes: -(2^22 + 1024 i), exact in float32
FAR_LOGIT = 2.0 ** 22
#: the scaled logit the large-logit rows carry (exp overflows there without a max)
LARGE_LOGIT = 1000.0


def _dyadic(make: Maker, *shape: int) -> Array:
    """Values k/8 in [-2, 2]: sums and means of a power-of-two count are exact in float32."""
    return make.rng.integers(-16, 17, size=shape) / 8.0


def later_maximum(make: Maker, n: int, m: int, block_k: int, d: int = 4, step: float = 3.0
                  ) -> tuple[Array, Array]:
    """Q, K whose scaled scores grow by ``step`` from each key tile to the next, for every
    query: the running max rises at every tile, so rescaling matters."""
    q, k = make.grid(n, d) * 0.5, make.grid(m, d) * 0.5
    q[:, -1] = np.sqrt(d)  # (times K's last feature, then divided by sqrt(d): the tile's lift)
    k[:, -1] = (np.arange(m) // block_k) * step
    return q, k


def far_below(make: Maker, n: int, m: int, rows: list[int] | None = None
              ) -> tuple[Array, Array, Array]:
    """Q, K, V (d = 4) whose scaled logits in the chosen rows (all by default) all equal
    -(2^22 + 1024 i): the answer there is the mean of V, exact in any precision. The other
    rows score ordinary dyadic logits."""
    q = np.zeros((n, 4))
    k = np.zeros((m, 4))
    k[:, 0] = 1.0
    k[:, 1:] = _dyadic(make, m, 3)
    far = range(n) if rows is None else rows
    for i in range(n):
        if i in far:
            q[i, 0] = -2.0 * (FAR_LOGIT + 1024.0 * i)  # (scaled by 1/sqrt(4) = 1/2)
        else:
            q[i, 1:] = _dyadic(make, 3)
    return q, k, _dyadic(make, m, 3)


def large_logits(make: Maker, n: int, m: int, offsets: list[float], d: int = 4
                 ) -> tuple[Array, Array]:
    """Q, K whose scaled logits are moderate plus a per-row offset (+1e3 in the large rows)."""
    q, k = make.grid(n, d), make.grid(m, d)
    k[:, -1] = 1.0
    q[:, -1] = np.array(offsets) * np.sqrt(d)
    return q, k


def make_probes(make: Maker) -> list[Probe]:
    g = make.grid
    later_q, later_k = later_maximum(make, 6, 20, 6)
    later_cq, later_ck = later_maximum(make, 8, 12, 4)
    later_rq, later_rk = later_maximum(make, 5, 11, 4)
    far_q, far_k, far_v = far_below(make, 4, 16)
    mixed_q, mixed_k, mixed_v = far_below(make, 5, 12, rows=[1, 3])
    big_q, big_k = large_logits(make, 5, 10, [LARGE_LOGIT, 0.0, LARGE_LOGIT + 0.5, 0.0, -3.0])
    same = (g(9, 4), g(11, 4), g(11, 3))
    probes = [
        new_probe("single-tile", (g(5, 4), g(7, 4), g(7, 3)), "unbatched", "single-tile",
                  bank=("B-6", "B-12"), repeat=True, traced=True),
        new_probe("remainder-tiles", (g(37, 4), g(45, 4), g(45, 3), False, 16, 16), "unbatched",
                  "remainder", bank=("B-20",), traced=True),
        new_probe("uneven-blocks", (g(12, 4), g(17, 4), g(17, 3), False, 8, 5), "unbatched",
                  "remainder", TILE_SIZED, bank=("B-6",)),
        new_probe("uneven-blocks-more-queries", (g(13, 4), g(9, 4), g(9, 2), False, 5, 8),
                  "unbatched", "remainder", TILE_SIZED, bank=("B-6", "B-12")),
        new_probe("tiles-of-one", (g(4, 3), g(6, 3), g(6, 2), False, 1, 1), "unbatched",
                  TILE_SIZED, bank=("B-2",)),
        new_probe("one-query", (g(1, 4), g(17, 4), g(17, 3)), "unbatched", "remainder",
                  bank=("A-edge-3",)),
        new_probe("later-maximum", (later_q, later_k, g(20, 3), False, 4, 6), "unbatched",
                  "later-max", "remainder", TILE_SIZED, bank=("B-10", "B-2")),
        new_probe("later-maximum-causal", (later_cq, later_ck, g(12, 3), True, 4, 4),
                  "unbatched", "later-max", "causal", TILE_SIZED, bank=("B-10", "A-edge-6")),
        new_probe("later-maximum-remainder", (later_rq, later_rk, g(11, 2), False, 2, 4),
                  "unbatched", "later-max", "remainder", TILE_SIZED, bank=("B-10",)),
        new_probe("far-below-zero", (far_q, far_k, far_v, False, 4, 4), "unbatched", "far",
                  TILE_SIZED, bank=("B-10", "B-30")),
        new_probe("far-below-some-rows", (mixed_q, mixed_k, mixed_v, False, 2, 4), "unbatched",
                  "far", DIAGNOSIS_ONLY, TILE_SIZED, bank=("B-10", "B-30")),
        new_probe("large-logits", (big_q, big_k, g(10, 3), False, 2, 4), "unbatched", "large",
                  TILE_SIZED, bank=("B-10", "A-edge-2")),
        new_probe("causal-square", (g(19, 4), g(19, 4), g(19, 3), True, 4, 6), "unbatched",
                  "causal", TILE_SIZED, bank=("A-edge-6",), traced=True),
        new_probe("causal-cached", (g(9, 4), g(21, 4), g(21, 3), True, 4, 8), "unbatched",
                  "causal", TILE_SIZED, bank=("A-edge-6",)),
        new_probe("causal-single-tile", (g(5, 4), g(8, 4), g(8, 3), True), "unbatched",
                  "causal", "single-tile", bank=("A-edge-6",)),
        new_probe("causal-tiles-of-one", (g(4, 3), g(6, 3), g(6, 2), True, 1, 1), "unbatched",
                  "causal", TILE_SIZED, bank=("A-edge-6",)),
        new_probe("causal-batched", (g(2, 6, 4), g(2, 11, 4), g(2, 11, 3), True, 3, 4),
                  "batched", "causal", TILE_SIZED, bank=("A-edge-6", "B-20")),
        new_probe("batched-heads", (g(2, 3, 10, 4), g(2, 3, 12, 4), g(2, 3, 12, 3), False, 4, 5),
                  "batched", TILE_SIZED, bank=("B-20",)),
        new_probe("batched", (g(2, 9, 4), g(2, 7, 4), g(2, 7, 3), False, 4, 3), "batched",
                  TILE_SIZED, bank=("B-20",)),
        new_probe("blocks-a", (*same, False, 16, 16), "unbatched", "concept",
                  bank=("B-2",)),
        new_probe("blocks-b", (*same, False, 3, 5), "unbatched", "concept", "remainder",
                  bank=("B-2",)),
    ]
    return probes + sixteen_key_tiles(make) + sized_for_course_tiles(make, probes)


#: the tile size a course's code may fix inside (CS336's 16 x 16)
COURSE_BLOCK = 16


def sixteen_key_tiles(make: Maker) -> list[Probe]:
    """The later-maximum probes again, sized for 16 x 16 tiles (several key tiles, every row's
    maximum in a later one): each runs only where its probe cannot, a course's code that fixes
    its tiles at 16 inside (CS336), so that a rescaling mistake costs there what it costs
    here. (Made after every other probe: their inputs stay as they were.)"""
    b = COURSE_BLOCK
    rows = [(later_maximum(make, 20, 53, b), 20, 53, False, "later-maximum"),
            (later_maximum(make, 40, 40, b), 40, 40, True, "later-maximum-causal"),
            (later_maximum(make, 7, 37, b), 7, 37, False, "later-maximum-remainder")]
    return [new_probe(f"{stood}-{b}", (q, k, make.grid(m, 3), causal, b, b), "unbatched",
                      "later-max", *(("causal",) if causal else ("remainder",)),
                      f"{STANDS_IN}{stood}", bank=("B-10",))
            for (q, k), n, m, causal, stood in rows]


def _course_inputs(make: Maker) -> dict[str, tuple[object, ...]]:
    """The arguments of each stand-in sized for 16 x 16 tiles, by the probe it stands in for:
    several tiles of 16 (at most three) where the probe holds several of its own sizes, with a
    shorter last tile where it has one; a causal probe square (a course's causal flag may be
    defined for as many keys as queries only). Made in this order, after every other probe."""
    g = make.grid
    b = COURSE_BLOCK
    far_q, far_k, far_v = far_below(make, b, 3 * b)
    mixed_q, mixed_k, mixed_v = far_below(make, 40, 3 * b, rows=[1, 3, 18, 33])
    pattern = [LARGE_LOGIT, 0.0, LARGE_LOGIT + 0.5, 0.0, -3.0]
    big_q, big_k = large_logits(make, 40, 42, [pattern[i % 5] for i in range(40)])
    return {
        "uneven-blocks": (g(24, 4), g(38, 4), g(38, 3), False, b, b),
        "uneven-blocks-more-queries": (g(41, 4), g(18, 4), g(18, 2), False, b, b),
        "tiles-of-one": (g(32, 3), g(48, 3), g(48, 2), False, b, b),
        "far-below-zero": (far_q, far_k, far_v, False, b, b),
        "far-below-some-rows": (mixed_q, mixed_k, mixed_v, False, b, b),
        "large-logits": (big_q, big_k, g(42, 3), False, b, b),
        "causal-square": (g(44, 4), g(44, 4), g(44, 3), True, b, b),
        "causal-single-tile": (g(8, 4), g(8, 4), g(8, 3), True),
        "causal-tiles-of-one": (g(48, 3), g(48, 3), g(48, 2), True, b, b),
        "causal-batched": (g(2, 37, 4), g(2, 37, 4), g(2, 37, 3), True, b, b),
        "batched-heads": (g(2, 3, 40, 4), g(2, 3, 38, 4), g(2, 3, 38, 3), False, b, b),
        "batched": (g(2, 41, 4), g(2, 37, 4), g(2, 37, 3), False, b, b),
    }


def sized_for_course_tiles(make: Maker, probes: list[Probe]) -> list[Probe]:
    """Stand-ins for the probes whose tiles their block sizes choose (uneven, unit, remainder
    and causal tiles, leading axes, large logits, logits far below zero), sized for 16 x 16
    tiles: where a course's code fixes its tiles at 16 inside (CS336), those probes mostly
    hold one key tile and cannot show a tile-combination mistake; each stand-in runs only
    where its probe cannot and is scored as it, so that a tile mistake costs there about what
    it costs here. (Causal ones are square, and also stand in where the course's causal flag
    takes no cached keys; the cached probe itself has none: its point is the m - n offset.)"""
    by_id = {probe.id: probe for probe in probes}
    return [new_probe(f"{stood}-{COURSE_BLOCK}", args,
                      *(by_id[stood].tags - {TILE_SIZED}), f"{STANDS_IN}{stood}",
                      bank=by_id[stood].question_bank, repeat=by_id[stood].repeat,
                      traced=by_id[stood].traced)
            for stood, args in _course_inputs(make).items()]


def _blocks_change_nothing(r: Outcomes) -> Verdict:
    a, b = output_of(r, "blocks-a"), output_of(r, "blocks-b")
    ok = close(a, b, 1e-6)
    return ok, ("the same inputs give the same output with 16 x 16 and 3 x 5 tiles." if ok else
                "the same inputs give different outputs with 16 x 16 and 3 x 5 tiles: tiling "
                "is a way to compute attention, it must not change the answer.")


def _far_below_is_the_mean(r: Outcomes) -> Verdict:
    probe = r["far-below-zero"][0]
    out = output_of(r, "far-below-zero")
    mean = probe.args[2].mean(axis=0)
    ok = close(out, np.broadcast_to(mean, out.shape), 1e-6)
    return ok, ("rows whose logits are all equal, far below zero, give the mean of the values."
                if ok else
                "every logit of each row is the same number, about -4.2e6, so each row's weights "
                f"are uniform and the output is the mean of V {np.round(mean, 4).tolist()}; got "
                f"{np.round(out, 4).tolist()}. A running max must be able to reach any logit.")


def read_outputs(outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
    """An L of shape (..., n, 1) (CS336's test finds L by its shape) is set aside as of the
    wrong shape, a ``wrong-shape`` error for L alone: O is still compared and diagnosed."""
    read = []
    for outcome in outcomes:
        value, lse = outcome.returned("O"), outcome.returned("L")
        if (outcome.ok and value is not None and lse is not None and lse.ndim == value.ndim
                and lse.shape == (*value.shape[:-1], 1)):
            outcome = dataclasses.replace(outcome, outputs={"O": value}, message=(
                f"{SET_ASIDE}L has shape {tuple(lse.shape)}, with a trailing axis of one; it "
                f"holds one logsumexp per query, {tuple(value.shape[:-1])} (O is still graded)."))
        read.append(outcome)
    return read


def _lse_shape(r: Outcomes) -> Verdict:
    probe, outcome = r["single-tile"]
    lse = outcome.returned("L")
    want = probe.args[0].shape[:-1]
    if outcome.message.startswith(SET_ASIDE):
        return False, outcome.message.removeprefix(SET_ASIDE)
    if lse is None:
        return False, f"L should come back as the second output, of shape {want}."
    ok = tuple(lse.shape) == want
    return ok, (f"L has one value per query, shape {want}." if ok else
                f"L has shape {tuple(lse.shape)}; it holds one logsumexp per query, {want}.")


CONCEPTS: tuple[Concept, ...] = (
    Concept("tiles-change-nothing", "Tile sizes do not change the answer", ("B-2",),
            ("blocks-a", "blocks-b"), _blocks_change_nothing),
    Concept("far-below-gives-the-mean", "Equal logits far below zero give the mean of V",
            ("B-10", "B-30"), ("far-below-zero",), _far_below_is_the_mean),
    Concept("lse-per-query", "L holds one logsumexp per query", ("B-10",),
            ("single-tile",), _lse_shape),
)


def call_sizes(probe: Probe) -> tuple[int, int, bool, int, int]:
    """(n, m, causal, block_q, block_k) of a probe (the defaults where it leaves them out)."""
    q, k, extra = probe.args[0], probe.args[1], probe.args[3:]
    given = list(extra) + [False, 16, 16][len(extra):]
    causal, block_q, block_k = given[0], given[1], given[2]
    return q.shape[-2], k.shape[-2], bool(causal), int(block_q), int(block_k)


def flash_fields(probe: Probe, recipe: Recipe) -> dict[str, object]:
    q, v = probe.args[0], probe.args[2]
    n, m, causal, block_q, block_k = call_sizes(probe)
    d = q.shape[-1]
    return {**attention_sizes(q, d, v.shape[-1], n, m, 1, d, recipe),
            "d": d, "sqrt_d": f"{np.sqrt(d):.4g}", "block_q": block_q, "block_k": block_k,
            "full_q": (n // block_q) * block_q, "full_k": (m // block_k) * block_k,
            "sentinel": f"{flash.FINITE_SENTINEL:g}", "offset": m - n}


def unknown_rows(recipe: Recipe, probe: Probe) -> Array | None:
    """The query rows the recipe cannot define: rows it never computes (a dropped query tile),
    rows that see no key it keeps, and the rows whose failure is the mistake's symptom rather
    than a number (a finite initial max under logits far below it, exp without a max that
    overflows or underflows, a per-tile softmax over a tile where the row sees nothing)."""
    q, k = probe.args[0], probe.args[1]
    n, m, causal, block_q, block_k = call_sizes(probe)
    rows, keys = flash._limits(recipe, n, m, block_q, block_k)
    keep = flash.keep_mask(recipe, causal, n, m, block_q, block_k)
    keep = keep & (np.arange(m) < keys)[None, :]
    unknown = ~keep.any(axis=-1) | (np.arange(n) >= rows)
    scheme = choice(recipe, "flash_scheme")
    finite = scheme == "online" and choice(recipe, "flash_initial_max") == "finite"
    if finite or scheme == "none":
        with np.errstate(all="ignore"):
            scaled = np.where(keep, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
            top = scaled.max(axis=-1)
        lead = tuple(range(top.ndim - 1))
        unknown |= (top < flash.FAR_BELOW).any(axis=lead) if lead else top < flash.FAR_BELOW
    if scheme == "per_tile":
        for j0 in range(0, keys, block_k):
            unknown |= ~keep[:, j0:min(j0 + block_k, keys)].any(axis=-1)
    return unknown if unknown.any() else None


STAGE_WORDS = {"lse": "the logsumexp L", "rescale": "a key tile's factor exp(m_old - m_new)",
               "running_max": "the running max m", "running_sum": "the running sum l",
               "accumulator": "the output accumulator",
               "acc_factor": "the factor the accumulator is rescaled by",
               "masked_tile": "a tile's scores after the causal mask"}


def tiling_call(make: Maker, length: int, width: int, block: int) -> Probe:
    """The tiling check's call: n = m = ``length``, d = d_v = ``width``, square tiles of
    ``block``, non-causal."""
    q, k, v = (make.rng.normal(size=(length, width)) for _ in range(3))
    return new_probe("tiling", (q, k, v, False, block, block), "tiling")


TASK = Task("flash_attention_forward", flash.reference, flash.pipeline, make_probes, CONCEPTS,
            flash_fields, unknown_rows=unknown_rows, stage_words=STAGE_WORDS,
            diagnosed=("O", "L"), row_outputs=("L",), tiling_call=tiling_call,
            read_outputs=read_outputs)
