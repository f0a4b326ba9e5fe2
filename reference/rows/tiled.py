"""The catalogue rows of tiled attention (SPEC section 2, "IDs of tiled attention"): the
online softmax's running max, running sum and accumulator, the logsumexp L, the tiles
themselves and their causal mask; and, for the IDs of attention and of the causal mask that
carry over (``CARRIED``), their wrong choices in the tiled pipeline and their words there."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reference import edits
from reference.misconception import Misconception, Variant, Wording, variants_of
from reference.tasks.flash_attention_backward import weights_d

#: the tasks (``grader/tasks/``) of tiled attention
FORWARD = ("flash_attention_forward",)
TILED = FORWARD
BACKWARD = ("flash_attention_backward",)
#: the IDs of both passes: the tiles themselves and their causal mask
BOTH = (*FORWARD, *BACKWARD)

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
        stages=("accumulator", "output"),
        rewrites=(edits.rescale_accumulator,),
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
        stages=("acc_factor", "accumulator", "output"),
        rewrites=(edits.invert_rescale,),
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
        stages=("running_sum", "output", "lse"),
        rewrites=(edits.rescale_sum,),
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
        rewrites=(edits.divide_by_running_sum,),
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
        rewrites=(edits.add_log_sum,),
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
        rewrites=(edits.add_running_max,),
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
        rewrites=(edits.keep_scaled_max,),
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
        variants_of("flash_remainder", "keys", "queries", "both", only=BOTH)
        + variants_of("flash_remainder", *weights_d("keys", "both"), only=BACKWARD),
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
        variants_of("flash_mask_tiles", "tile_local", "tile_local_skip", only=BOTH)
        + variants_of("flash_mask_tiles", *weights_d("tile_local", "tile_local_skip"),
                      only=BACKWARD),
        "with tiles of {block_q} x {block_k}, your causal mask repeats the same triangle in "
        "every tile instead of following absolute positions",
        fix="Mask with absolute positions: `keep = (j0 + c) <= (i0 + r) + (m - n)` for the "
            "tile's rows r and columns c.",
        stages=("masked_tile", "output", "lse"),
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

#: the rows of the tiled backward alone (SPEC: D, and the scale of P and of the gradients)
BACKWARD_ROWS: tuple[Misconception, ...] = (
    Misconception(
        "backward-missing-d",
        "Your dS = P * dP leaves out the term D = rowsum(dO * O)",
        "Each row of P is a softmax, so its Jacobian is diag(P) - P P^T: the gradient of the "
        "scores is dS = P * (dP - D), where D_i = sum_j P_ij dP_ij, which FlashAttention-2 "
        "computes before the tile loops as D = rowsum(dO * O) (the same numbers, since "
        "O = P V). Without D every tile keeps only the diagonal part, as if the weights did "
        "not have to sum to 1, and dQ, dK come out wrong in every tile (dV, which needs no "
        "dS, is right).",
        ("B-2", "A-why-3"),
        variants_of("flash_d", "missing", only=BACKWARD),
        "your dQ and dK equal those of dS = P * dP in every (query tile, key tile) pair: the "
        "rows of dS should subtract D = rowsum(dO * O) first",
        fix="Before the tile loops compute `D = np.sum(grad_output * O, axis=-1)` and in each "
            "tile use `dS = P * (dP - D[..., i0:i1, None])`.",
        stages=("dS",),
        rewrites=(edits.subtract_d,),
    ),
    Misconception(
        "backward-p-unscaled",
        "You recompute P = exp(Q K^T - L) without the 1/sqrt(d) of the scores",
        "L is the logsumexp of the scaled scores S = Q K^T / sqrt(d), so the weights come back "
        "only as P = exp(S - L) with the same S. Recomputed from Q K^T, the tile's exponents "
        "are off by a factor of sqrt(d): the recomputed rows no longer sum to one, and dV, dQ "
        "and dK inherit it, although your dQ and dK keep the chain rule's 1/sqrt(d).",
        ("B-4", "B-11"),
        variants_of("flash_p_scale", "unscaled", *weights_d("unscaled"), only=BACKWARD),
        "your gradients match weights recomputed as exp(Q K^T - L) in each tile, without the "
        "1/sqrt(d) = 1/{sqrt_d} that L was computed with",
        fix="Recompute each tile's weights from the scaled scores: "
            "`P = np.exp(Q_tile @ K_tile.T / np.sqrt(d) - L_tile[..., None])`.",
        stages=("P",),
        rewrites=(edits.recompute_from_scaled,),
    ),
    Misconception(
        "backward-grad-unscaled",
        "Your dQ and dK lack the 1/sqrt(d) of S = Q K^T / sqrt(d)",
        "The scores are S = Q K^T / sqrt(d), so by the chain rule dQ = dS K / sqrt(d) and "
        "dK = dS^T Q / sqrt(d): the factor that scaled the scores comes back on the way down. "
        "Your weights P are right (dV agrees), but every tile's contribution to dQ and dK is "
        "sqrt(d) times too large.",
        ("B-4", "A-why-3"),
        variants_of("flash_grad_scale", "none", only=BACKWARD),
        "your dQ and dK are sqrt(d) = {sqrt_d} times the right ones, while dV is right: dS K and "
        "dS^T Q were not multiplied by 1/sqrt(d)",
        fix="Multiply each tile's contributions by the scale: `dQ_tile += dS @ K_tile / "
            "np.sqrt(d)` and `dK_tile += dS.T @ Q_tile / np.sqrt(d)`.",
        stages=("dQ", "dK"),
        rewrites=(edits.scale_the_contribution,),
        also=("dQ", "dK"),
    ),
)

#: the IDs of attention that carry over to the tiled backward: their wrong choices there, and
#: how each is told in a backward that recomputes P from the given L
CARRIED_BACKWARD: Mapping[str, tuple[tuple[Variant, ...], Wording]] = MappingProxyType({
    "scale-by-dk": (variants_of("scale", "dk", *weights_d("dk"), only=BACKWARD), Wording(
        "You divide the scores by d instead of sqrt(d)",
        "Each score is a dot product over d features and is divided by sqrt(d); L was computed "
        "from those scores. Dividing by d in your backward recomputes every tile's P = "
        "exp(S - L) from the wrong scores (its rows no longer sum to one), and the chain rule "
        "then brings 1/d instead of 1/sqrt(d) into dQ and dK.",
        "Scale the scores (or Q, once) by `1 / np.sqrt(d)` with `d = Q.shape[-1]`, not by "
        "`1 / d`, both where P is recomputed and in dQ and dK.",
        "your scores are divided by d = {d} when P is recomputed and in dQ, dK; the correct "
        "divisor is sqrt(d) = {sqrt_d}")),
    "no-scaling": (variants_of("scale", "none", *weights_d("none"), only=BACKWARD), Wording(
        "You do not scale the scores by 1/sqrt(d) anywhere in the backward",
        "S = Q K^T / sqrt(d) in every tile: L is the logsumexp of those scores, so P = "
        "exp(S - L) needs the factor, and so do dQ = dS K / sqrt(d) and dK = dS^T Q / sqrt(d). "
        "Without it P is recomputed from the wrong scores and dQ, dK miss the chain rule's "
        "factor.",
        "Scale each tile's scores by `1 / np.sqrt(d)` before `np.exp(S - L)`, and multiply the "
        "dQ and dK contributions by it too.",
        "your P is recomputed from Q K^T and your dQ, dK lack 1/sqrt(d) = 1/{sqrt_d}")),
    "causal-mask-top-left": (variants_of("mask_align", "top_left", *weights_d("top_left"), only=BACKWARD), Wording(
        "With more keys than queries, your causal mask is aligned at the top left",
        "With m > n the n queries are the last n of the m positions: query i sees keys "
        "j <= m - n + i. Recomputing P with j <= i zeroes the weights of the most recent keys, "
        "so the recomputed rows sum to less than one and those keys get no gradient; with "
        "n = m both agree.",
        "Offset the comparison by the cached positions: `keep = j <= i + (m - n)` in each tile.",
        "with n = {n} queries and m = {m} keys, your recomputed P lets query i see keys 0..i "
        "instead of 0..m - n + i")),
    "causal-mask-missing": (variants_of("causal", "missing", *weights_d("missing"), only=BACKWARD), Wording(
        "Your backward ignores its causal argument",
        "With `causal=True` the forward gave keys j > i + (m - n) weight 0, and L covers only "
        "the visible keys. Recomputing P = exp(S - L) without the mask gives the future keys "
        "weights (each row then sums to more than one) and gradients they must not get.",
        "When `causal` is True, fill the scores of keys `j > i + (m - n)` with -inf in each "
        "tile before `np.exp(S - L)` (or skip tiles wholly in the future).",
        "your gradients with causal=True give weight, and gradient, to keys after each "
        "query's position")),
})
