"""The catalogue rows of tiled attention (SPEC section 2, "IDs of tiled attention"): the
online softmax's running max, running sum and accumulator, the logsumexp L, the tiles
themselves and their causal mask; and, for the IDs of attention and of the causal mask that
carry over (``CARRIED``), their wrong choices in the tiled pipeline and their words there."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reference.misconception import Misconception, Variant, Wording, variants_of

#: the tasks (``grader/tasks/``) of tiled attention
FORWARD = ("flash_attention_forward",)
TILED = FORWARD

ROWS: tuple[Misconception, ...] = (
    Misconception(
        "online-output-not-rescaled",
        "When the running max grows you rescale the running sum but not the accumulator",
        "The accumulator holds sum_j exp(S_ij - m) V_j for the running max m at the time each "
        "key tile was added. When a later tile raises m from m_old to m_new, every term already "
        "in it is too large by exp(m_new - m_old), exactly like the terms of l: both must be "
        "multiplied by exp(m_old - m_new) before the new tile's p V is added. Rescaling l alone "
        "leaves the earlier tiles with too much weight, which shows only when a later key tile "
        "holds a row's maximum.",
        ("B-10", "B-2"),
        variants_of("flash_acc_rescale", "kept", only=TILED),
        "when a later key tile raises the running max (tiles of {block_k} keys), your earlier "
        "tiles keep their old weight in the output: the accumulator is not multiplied by "
        "exp(m_old - m_new)",
        fix="Multiply the accumulator by `alpha = np.exp(m_old - m_new)` (per row) before "
            "adding `p @ V_tile`, as you do for l.",
        stages=("output",),
    ),
    Misconception(
        "online-rescale-inverted",
        "You rescale the accumulator by exp(m_new - m_old), the inverse factor",
        "When the running max grows from m_old to m_new, the terms already accumulated were "
        "computed against m_old and are too large by exp(m_new - m_old); they are corrected by "
        "multiplying with exp(m_old - m_new), a number at most 1. Algorithm 1 of the "
        "FlashAttention-2 paper prints the update as diag(e^{m_old - m_new})^-1 O, an erratum: "
        "written literally it multiplies by the inverse and lets earlier tiles grow instead of "
        "shrink.",
        ("B-10",),
        variants_of("flash_acc_rescale", "inverted", only=TILED),
        "when a later key tile raises the running max, your accumulator is multiplied by "
        "exp(m_new - m_old) (at least 1) instead of exp(m_old - m_new) (at most 1)",
        fix="Rescale with `np.exp(m_old - m_new)` (m_new >= m_old, so the factor is at most 1), "
            "not its inverse.",
        stages=("output",),
    ),
    Misconception(
        "online-sum-not-rescaled",
        "You rescale the accumulator but add each tile's row sums to l without the factor",
        "The running sum l = sum_j exp(S_ij - m) is measured against the running max, like the "
        "accumulator. When a later tile raises m, the part of l from the earlier tiles must be "
        "multiplied by exp(m_old - m_new) too; added unscaled, l is too large, the final "
        "O = acc / l is too small, and L = m + log l too large.",
        ("B-10", "B-2"),
        variants_of("flash_sum_rescale", "kept", only=TILED),
        "when a later key tile raises the running max (tiles of {block_k} keys), your running "
        "sum l keeps the earlier tiles' sums unscaled, so the denominator is too large",
        fix="Update the running sum as `l = np.exp(m_old - m_new) * l + p.sum(axis=-1)`.",
        stages=("output", "lse"),
    ),
    Misconception(
        "tile-local-softmax",
        "You normalise each key tile by its own sum and add the tiles' outputs",
        "Attention is one softmax over all the keys of a row: each weight is divided by the sum "
        "over every key. A softmax per key tile makes each tile's weights sum to 1 on their own, "
        "so a row with T key tiles gets weights summing to T, and a key weighs as much as its "
        "own tile makes it, whatever the other tiles hold. The online softmax keeps one running "
        "max and one running sum across the tiles and divides once, at the end.",
        ("B-2", "B-13"),
        variants_of("flash_scheme", "per_tile", only=TILED),
        "each of your key tiles ({block_k} keys) is normalised on its own and the tiles' outputs "
        "are added, so each row's weights sum to the number of tiles",
        fix="Keep one running max m and sum l across the key tiles, rescale the accumulator as m "
            "grows, and divide by l once at the end.",
        stages=("output",),
    ),
    Misconception(
        "missing-final-division",
        "You never divide the accumulator by the running sum l",
        "The accumulator holds the unnormalised sum of exp(S_ij - m) V_j: the weights become a "
        "distribution only when it is divided by l = sum_j exp(S_ij - m) at the end of the key "
        "loop. Without the division the output is scaled by l, a different number for each row.",
        ("A-tf-2", "B-2"),
        variants_of("flash_final", "undivided", only=TILED),
        "your output is the accumulator itself, sum over tiles of exp(S - m) V, never divided "
        "by the running sum l",
        fix="After the loop over key tiles, divide: `O = acc / l[..., None]`.",
        stages=("output",),
    ),
    Misconception(
        "lse-max-only",
        "You return the running max m as L, without log l",
        "The logsumexp is L = log sum_j exp(S_ij) = m + log sum_j exp(S_ij - m) = m + log l: the "
        "max alone is only its lower bound (equal when one key takes all the weight). The "
        "backward pass rebuilds P = exp(S - L) from L, so every P would be too large.",
        ("B-10",),
        variants_of("flash_lse", "max_only", only=TILED),
        "your L equals the running max m; the logsumexp is m + log l",
        fix="Return `L = m + np.log(l)` (the running max plus the log of the running sum).",
        stages=("lse",),
    ),
    Misconception(
        "lse-missing-max",
        "You return log l as L, without adding the running max back",
        "The running sum l is measured against the running max: l = sum_j exp(S_ij - m). Its log "
        "is therefore log sum_j exp(S_ij) - m, and the logsumexp is m + log l. Without m, L is "
        "off by each row's maximum score.",
        ("B-10",),
        variants_of("flash_lse", "log_sum_only", only=TILED),
        "your L equals log l, the log of the running sum; the logsumexp adds the running max: "
        "m + log l",
        fix="Add the running max back: `L = m + np.log(l)`.",
        stages=("lse",),
    ),
    Misconception(
        "lse-missing-scale",
        "Your output is right but L is the logsumexp of the unscaled scores",
        "The softmax runs over the scaled scores S = Q K^T / sqrt(d), so L is their logsumexp: "
        "the backward pass computes P = exp(S - L) with the same S. Taking the logsumexp of "
        "Q K^T, or keeping the running max on the raw scores (the scale folded into the exp, as "
        "in Triton kernels) and adding it to log l unscaled, gives an L the backward cannot use.",
        ("B-4", "B-11"),
        variants_of("flash_lse", "unscaled_scores", "raw_max", only=TILED),
        "your L is the logsumexp of the scores without the 1/sqrt(d) = 1/{sqrt_d} factor",
        fix="Compute L from the scaled scores: with the max m of S = Q K^T / sqrt(d), "
            "`L = m + np.log(l)`.",
        stages=("lse",),
    ),
    Misconception(
        "finite-initial-max",
        "Your running max starts at a finite sentinel instead of -inf",
        "The running max must be able to reach any row's largest score. Started at 0, -1e4 or "
        "-1e6, it stays at the sentinel for a row whose scores all lie far below it: every "
        "exp(S - m) underflows to 0, l stays 0 and the row comes out 0/0 (or 0). On ordinary "
        "scores the rescaling cancels the sentinel, which is why only scores far below zero "
        "show it (real kernels have failed the same way). Start at -inf, or at the first "
        "tile's maximum, or at a sentinel no lower than -1e9.",
        ("B-10", "B-30"),
        variants_of("flash_initial_max", "finite", only=TILED),
        "on rows whose scores all lie far below zero (about -4.2e6) your running max stays at "
        "its starting value, every exp(S - m) underflows and the row is lost",
        fix="Start the running max at `-np.inf` (or at the first key tile's row max), not at a "
            "finite number.",
        stages=("output", "lse"),
    ),
    Misconception(
        "remainder-tile-dropped",
        "You count tiles by floor division, so the last partial tile is never processed",
        "When a length is not a multiple of its block size, n // block_q and m // block_k count only the full tiles: the queries or keys after the last full tile "
        "are never visited. Count with a ceiling, range(0, n, block_q) or "
        "(n + block_q - 1) // block_q, and cut the last tile short with min(start + block, n).",
        (),
        variants_of("flash_remainder", "keys", "queries", "both", only=TILED),
        "with blocks of {block_q} x {block_k}, your tiles stop at query {full_q} and key "
        "{full_k} of n = {n}, m = {m}: the rest are never processed",
        fix="Loop over `range(0, n, block_q)` and `range(0, m, block_k)` and end each tile at "
            "`min(start + block, length)`.",
        stages=("output", "lse"),
    ),
    Misconception(
        "causal-mask-tile-local",
        "Your causal mask compares tile-local row and column numbers",
        "Inside a tile the row r and the column c are offsets from the tile's start; the causal "
        "test is on absolute positions: key j = j0 + c is visible to query i = i0 + r iff "
        "j <= i + (m - n). Comparing c <= r gives every tile the same triangle, so queries lose "
        "keys in their past tiles and see some in their future ones. With a single tile both "
        "agree, which is why small tests pass.",
        ("A-edge-6",),
        variants_of("flash_mask_tiles", "tile_local", "tile_local_skip", only=TILED),
        "with tiles of {block_q} x {block_k}, your causal mask repeats the same triangle in "
        "every tile instead of following absolute positions",
        fix="Mask with absolute positions: `keep = (j0 + c) <= (i0 + r) + (m - n)` for the "
            "tile's rows r and columns c.",
        stages=("output", "lse"),
    ),
)

#: the IDs of attention and of the causal mask that carry over to tiled attention (SPEC
#: section 2): their wrong choices in the tiled pipeline, and how each is told there
CARRIED: Mapping[str, tuple[tuple[Variant, ...], Wording]] = MappingProxyType({
    "scale-by-dk": (variants_of("scale", "dk", only=TILED), Wording(
        "You divide the scores by d instead of sqrt(d)",
        "Each score is a dot product over d features, whose typical size grows like sqrt(d); "
        "dividing by sqrt(d) brings it back to unit scale. Dividing by d over-shrinks every "
        "tile's scores, so the softmax flattens and L, the logsumexp of the scores, changes "
        "with it.",
        "Scale the scores (or Q, once) by `1 / np.sqrt(d)` with `d = Q.shape[-1]`, not by "
        "`1 / d`.",
        "your scores are divided by d = {d}; the correct divisor is sqrt(d) = {sqrt_d}")),
    "no-scaling": (variants_of("scale", "none", only=TILED), Wording(
        "You do not scale the scores by 1/sqrt(d)",
        "S = Q K^T / sqrt(d) in every tile: without the factor the scores spread with d, the "
        "softmax sharpens and L is the logsumexp of the wrong scores.",
        "Scale each tile's scores (or Q, once, before the loop) by `1 / np.sqrt(d)`.",
        "your scores are not divided at all; the correct divisor is sqrt(d) = {sqrt_d}")),
    "unstable-softmax": (variants_of("flash_scheme", "none", only=TILED), Wording(
        "Your tiles exponentiate the scores without any running max",
        "exp(S) overflows to inf above about 709 (88 in float32) and underflows to 0 far below "
        "zero. The online softmax subtracts a running max m before exponentiating and rescales "
        "what it has accumulated when m grows: the largest exponent is then 0, whatever the "
        "scores' size.",
        "Keep a running row max m across the key tiles and use `np.exp(S_tile - m_new)`, "
        "rescaling l and the accumulator by `np.exp(m_old - m_new)`.",
        "your result has NaN or inf for scores near 1e3, or 0/0 for scores far below zero; "
        "with a running max subtracted it is finite")),
    "causal-mask-top-left": (variants_of("mask_align", "top_left", only=TILED), Wording(
        "With more keys than queries, your causal mask is aligned at the top left",
        "With m > n the n queries are the last n of the m positions (a KV cache holds the "
        "first m - n): query i sits at position m - n + i and sees keys j <= m - n + i. "
        "Comparing j <= i hides the most recent keys; with n = m both agree.",
        "Offset the comparison by the cached positions: `keep = j <= i + (m - n)`.",
        "with n = {n} queries and m = {m} keys, your query i sees keys 0..i instead of "
        "0..m - n + i")),
    "causal-mask-missing": (variants_of("causal", "missing", only=TILED), Wording(
        "Your function ignores its causal argument",
        "With `causal=True` query i may see only the keys j <= i + (m - n): every later key "
        "must get weight 0 (and drop out of L), and the key tiles wholly in a query tile's "
        "future can be skipped.",
        "When `causal` is True, fill the scores of keys `j > i + (m - n)` with -inf in each "
        "tile before the running max.",
        "your outputs with causal=True use keys after each query's position")),
})
