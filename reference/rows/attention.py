"""The catalogue rows of softmax, scaled dot-product attention and multi-head attention
(SPEC section 2), and of the stages causal self-attention shares with them (scale, mask,
normalisation, projections, heads)."""

from __future__ import annotations

from types import MappingProxyType

from reference import edits
from reference.misconception import Misconception, Wording, variants_of

#: the tasks (``grader/tasks/``) a row's wrong choices can occur in
CSA = ("causal_self_attention",)
ALL_TASKS = ("softmax", "attention", "multi_head_attention", *CSA)
ATTN = ("attention",)
MHA = ("multi_head_attention",)
ATTN_MHA = ("attention", "multi_head_attention")
#: also inside causal self-attention, where the mask is the function's own
ATTENTIVE = (*ATTN_MHA, *CSA)
MHA_CSA = (*MHA, *CSA)


_WRONG_PROJECTIONS = ("kqv", "qqv", "kkv", "qkk", "qkq", "qvk", "qqq", "qk-", "---")

ROWS: tuple[Misconception, ...] = (
    Misconception(
        "scale-by-dk",
        "You divide the scores by d_k instead of sqrt(d_k)",
        "A dot product of two d_k-dimensional vectors with unit-variance entries has variance d_k, "
        "so its typical size (standard deviation) is sqrt(d_k). Dividing by sqrt(d_k) brings the "
        "scores back to unit scale; dividing by d_k over-shrinks them and flattens the softmax "
        "towards uniform weights. (Scaling Q and K each by 1/sqrt(d_k) has the same effect. Some "
        "research code uses 1/d_k on purpose, but this assignment asks for 1/sqrt(d_k).)",
        ("A-err-6", "B-11"),
        variants_of("scale", "dk", only=ATTENTIVE),
        "your scores are divided by d_k = {d_k}; the correct divisor is sqrt(d_k) = {sqrt_dk}",
        fix='Divide the scores by `np.sqrt(d_k)`, not by `d_k`.',
        stages=('scaled', 'weights'),
        rewrites=(edits.divide_by_sqrt,),
    ),
    Misconception(
        "no-scaling",
        "You do not scale the scores by 1/sqrt(d_k)",
        "Without the 1/sqrt(d_k) factor the spread of the scores grows with d_k, the softmax "
        "saturates towards one-hot weights and its gradients vanish. The factor is part of "
        "scaled dot-product attention, not an optional extra. (Keras' `layers.Attention` is "
        "unscaled by default; if you followed it, that is where the difference comes from.)",
        ("A-err-3", "A-edge-7", "B-27"),
        variants_of("scale", "none", only=ATTENTIVE),
        "your scores are not divided at all; the correct divisor is sqrt(d_k) = {sqrt_dk}",
        fix=('Divide the scores by `np.sqrt(d_k)` (with `d_k = Q.shape[-1]`) before the '
             'softmax.'),
        stages=('scaled', 'softmax', 'exponentials', 'output'),
        rewrites=(edits.add_scale,),
    ),
    Misconception(
        "scale-multiplied",
        "You multiply the scores by sqrt(d_k) instead of dividing",
        "The factor shrinks the scores: it is 1/sqrt(d_k). Multiplying by sqrt(d_k) makes the "
        "spread d_k times too large and the softmax even sharper. This often comes from writing "
        "`scores / scale` where `scale` already holds d_k ** -0.5.",
        ("B-11", "B-27"),
        variants_of("scale", "times_sqrt_dk", only=ATTENTIVE),
        "your scores are multiplied by sqrt(d_k) = {sqrt_dk}; they should be divided by it",
        fix=('Divide the scores by `np.sqrt(d_k)` instead of multiplying by it (or '
             'multiply by `d_k ** -0.5`).'),
        stages=('scaled', 'weights'),
        rewrites=(edits.flip_scale,),
    ),
    Misconception(
        "scale-by-dv",
        "You scale by sqrt(d_v), the value width, instead of sqrt(d_k)",
        "The scale corrects the size of the dot product q.k, a sum over the d_k features of "
        "queries and keys. The value width d_v plays no part in the scores; it only sets the "
        "width of the output.",
        ("B-6", "B-11"),
        variants_of("scale", "sqrt_dv", only=ATTN),
        "your scores are divided by sqrt(d_v) = {sqrt_dv}; the correct divisor is "
        "sqrt(d_k) = {sqrt_dk}",
        fix=('Take d_k from the queries (`d_k = Q.shape[-1]`), not from V, and divide the '
             'scores by `np.sqrt(d_k)`.'),
        stages=('scaled', 'weights'),
        rewrites=(edits.divide_by_head_width,),
    ),
    Misconception(
        "scale-after-softmax",
        "You apply the scale to the weights after the softmax",
        "The scale belongs inside the softmax: it controls how sharp the distribution over keys "
        "is. Multiplying the weights afterwards (by 1/sqrt(d_k) or any other factor) leaves the "
        "sharpness unchanged and makes every row sum to that factor instead of 1.",
        ("B-1", "B-2"),
        variants_of("scale_at", "weights", only=ATTENTIVE),
        "your weights sum to {weights_sum} per row; they should sum to 1",
        fix=('Divide the scores by `np.sqrt(d_k)` before the softmax, and use the weights '
             'exactly as the softmax returns them.'),
        stages=('weights',),
        rewrites=(edits.scale_inside_softmax,),
    ),
    Misconception(
        "softmax-over-queries",
        "Your softmax runs over the queries, not over the keys",
        "Each query gets its own probability distribution over the keys, so the softmax runs "
        "along the last axis of the (..., n, m) score matrix: every row sums to 1. Normalising "
        "down the columns makes the queries compete for each key instead. A hard-coded axis "
        "(`axis=0` or `axis=1`) is a common cause: it is the key axis for one rank only.",
        ("A-err-1", "B-2", "B-13"),
        variants_of("normalize", "over_queries", "over_queries_unstable", only=ATTENTIVE)
        + variants_of("normalize", "axis0", "axis1", only=ATTN),
        "the columns of your weights sum to 1 (over the n = {n} queries); the rows, over the "
        "m = {m} keys, should",
        fix=('Take the softmax along the last axis (`axis=-1`, over the keys), so that '
             'every row of weights sums to 1.'),
        # a prefix mask blocks its last key for every query: 0/0 over the queries
        ignores=frozenset({"prefix"}),
        stages=('softmax', 'weights', 'output'),
        rewrites=(edits.right_axis,),
        also=("shifted", "exponentials"),
    ),
    Misconception(
        "softmax-global",
        "You apply one softmax over the whole score matrix",
        "The softmax is row-wise: one distribution over keys per query. A single softmax over "
        "all scores makes unrelated queries compete with each other, and no row sums to 1.",
        ("B-13",),
        variants_of("normalize", "global", "global_all", only=ATTENTIVE)
        + variants_of("normalize", "global", only=("softmax",)),
        "all entries of your result together sum to 1 instead of each row (slice) separately",
        fix=('Normalise each row on its own: take the max and the sum along `axis=-1` with'
             ' `keepdims=True`.'),
        stages=('softmax', 'output'),
        in_conventions=MappingProxyType({
            "task:softmax": Wording(
                "You apply one softmax over the whole array",
                "A softmax normalises along one axis: every slice along `axis` becomes a "
                "distribution of its own that sums to 1. One softmax over all the entries makes "
                "entries of different slices compete with each other, and no slice sums to 1.",
                "Take the max and the sum along `axis` with `keepdims=True`, not over the whole "
                "array."),
        }),
        rewrites=(edits.row_softmax, edits.row_totals),
        also=("shifted", "exponentials"),
    ),
    Misconception(
        "sum-normalization",
        "You divide the raw scores by their sum instead of using softmax",
        "Scores can be negative or sum to nearly zero, so dividing by their sum gives negative or "
        "exploding 'weights'. The exponential in softmax makes every weight positive before the "
        "normalisation; that is why attention uses softmax.",
        ("A-why-2", "A-tf-2"),
        variants_of("normalize", "sum", only=ALL_TASKS),
        "your weights equal scores / sum(scores) (some are negative); softmax weights are "
        "exp(score) / sum(exp(score))",
        ignores=frozenset({"masked"}),
        fix=('Exponentiate first, `e = np.exp(s - s.max(axis=-1, keepdims=True))`, then '
             'divide `e` by its row sum.'),
        stages=('softmax', 'output'),
        rewrites=(edits.exponentiate_first,),
    ),
    Misconception(
        "missing-normalization",
        "You exponentiate the scores but never divide by the row sum",
        "Softmax has two steps: exponentiate, then divide by the sum so the weights of each row "
        "add up to 1. Without the division the output is a sum of values weighted by arbitrary "
        "positive numbers, not a weighted average.",
        ("A-tf-2", "B-2"),
        variants_of("normalize", "exp_only", "exp_shifted_only", only=ALL_TASKS),
        "your weights are exp(scores) without the division by their row sum",
        fix=('Divide the exponentials by their sum along the same axis: `e / '
             'e.sum(axis=-1, keepdims=True)`.'),
        stages=('softmax', 'output'),
        rewrites=(edits.then_normalise,),
    ),
    Misconception(
        "unstable-softmax",
        "Your softmax overflows for large scores (no max subtraction)",
        "exp(x) overflows to inf for x above about 709 (88 in float32), and inf/inf is NaN. "
        "Softmax is unchanged when you subtract a constant from every entry of a row, so "
        "subtract the row's maximum before exponentiating: the largest exponent is then 0.",
        ("B-10", "A-edge-2"),
        variants_of("normalize", "unstable", only=ALL_TASKS)
        + variants_of("normalize", "over_queries_unstable", only=ATTENTIVE),
        "your result has NaN or inf for scores around {big}; with the row maximum subtracted "
        "it is finite",
        fix=('Subtract the maximum before exponentiating: `np.exp(x - x.max(axis=axis, '
             'keepdims=True))`.'),
        stages=('exponentials',),
        rewrites=(edits.subtract_row_max,),
    ),
    Misconception(
        "softmax-global-max",
        "You subtract one global maximum instead of each row's maximum",
        "Subtracting the same constant from a row does not change its softmax, but it must be "
        "that row's own maximum: with one maximum for the whole array, a row whose scores all lie "
        "far below it underflows to exp(...) = 0 everywhere and then divides 0 by 0.",
        ("B-10",),
        variants_of("normalize", "global_max", only=ALL_TASKS),
        "a row whose scores lie far below the global maximum comes out as NaN (0/0)",
        fix=("Subtract the maximum along the softmax's axis, `x.max(axis=axis, "
             'keepdims=True)`, not `x.max()`.'),
        stages=('shifted', 'exponentials'),
        rewrites=(edits.row_max,),
    ),
    Misconception(
        "softmax-wrong-axis",
        "Your softmax normalises along the wrong axis",
        "`softmax(x, axis)` must make the slices along `axis` sum to 1. Your function normalises "
        "along a different axis (for example it ignores the `axis` argument and always uses the "
        "last one).",
        ("A-err-1", "B-2"),
        variants_of("axis", "last", "first", "second", "others", only=("softmax",)),
        "asked for axis={axis}, your slices sum to 1 along another axis",
        fix=('Use the `axis` argument you are given in both the max and the sum '
             '(`axis=axis, keepdims=True`), not a fixed axis.'),
        in_conventions=MappingProxyType({
            # a course whose softmax takes the rows of a matrix, and no axis (``ndim = 2``)
            "ndim:2": Wording(
                "Your softmax normalises down the columns instead of along each row",
                "Here the softmax takes a matrix and makes each row (the last axis) a "
                "distribution that sums to 1. Summing down the columns (axis 0) makes the rows "
                "compete for each column instead, and no row sums to 1.",
                "Take the max and the sum along each row, `axis=1` (or `axis=-1`) with "
                "`keepdims=True`, in both.",
                "your columns sum to 1 instead of your rows"),
        }),
        stages=('output',),
        rewrites=(edits.right_axis,),
        also=("shifted", "exponentials"),
    ),
    Misconception(
        "blend-keys",
        "You blend the keys, not the values",
        "Keys only decide how much each position counts (they are compared with the query); the "
        "values carry the content that is averaged. The output is weights @ V, of width d_v.",
        ("A-err-5", "B-21"),
        variants_of("values", "k", only=ATTENTIVE),
        "your output equals weights @ K (width d_k = {d_k}); it should be weights @ V "
        "(width d_v = {d_v})",
        fix='Multiply the weights by V, not by K: `weights @ V`.',
        stages=('heads', 'output'),
        rewrites=(edits.blend_values,),
    ),
    Misconception(
        "scores-transposed",
        "You compute K Q^T instead of Q K^T",
        "Q K^T has one row per query and one column per key (n x m), so that the softmax over the "
        "last axis gives each query a distribution over keys. K Q^T is its transpose (m x n): "
        "queries and keys swap roles, which only runs at all when n = m.",
        ("A-err-2", "B-12", "B-14"),
        variants_of("scores", "kqt", only=ATTENTIVE),
        "with n = m = {n} your weights are those of K Q^T (rows indexed by keys)",
        fix=('Compute the scores as Q K^T, one row per query: `Q @ np.swapaxes(K, -1, '
             '-2)`.'),
        stages=('scores', 'scaled'),
        rewrites=(edits.queries_first,),
    ),
    Misconception(
        "mask-after-softmax",
        "You zero the masked weights after softmax without renormalising",
        "Masking belongs before the softmax (set the blocked scores to -inf, so exp gives exactly "
        "0). Zeroing weights after the softmax leaves rows that no longer sum to 1. (Zeroing and "
        "then dividing by the new row sum would be correct.)",
        ("A-edge-6", "B-15"),
        variants_of("mask", "after_softmax", only=ATTENTIVE),
        "your masked weights are 0 but the remaining weights of a row sum to less than 1",
        fix=('Apply the mask to the scores before the softmax, `scores = np.where(mask, '
             'scores, -np.inf)`, not to the weights after it.'),
        stages=('weights',),
        rewrites=(edits.renormalise,),
    ),
    Misconception(
        "mask-zero-fill",
        "You set masked scores to 0 instead of -inf",
        "A score of 0 is an ordinary score: exp(0) = 1, so a masked key still gets weight. To "
        "block a key its score must be -inf (or a very large negative number such as -1e9), so "
        "that its weight is exactly 0.",
        ("A-edge-6", "B-30"),
        variants_of("mask", "zero_fill", only=ATTENTIVE),
        "your masked keys still get weight: their scores were set to 0, not to -inf",
        fix=('Fill the blocked scores with `-np.inf` (or a very large negative number), '
             'not 0: `np.where(mask, scores, -np.inf)`.'),
        in_conventions=MappingProxyType({
            # (True blocks: CMU 11-785's mytorch, nn.MultiheadAttention)
            "mask:block": Wording(
                "You set masked scores to 0 instead of -inf",
                "A score of 0 is an ordinary score: exp(0) = 1, so a masked key still gets "
                "weight. To block a key its score must be -inf (or a very large negative number "
                "such as -1e9), so that its weight is exactly 0.",
                'Fill the scores where the mask is True (blocked) with `-np.inf` (or a very '
                'large negative number), not 0: `np.where(mask, -np.inf, scores)`.'),
        }),
        stages=('masked',),
        rewrites=(edits.fill_far_below,),
    ),
    Misconception(
        "mask-inverted",
        "Your mask blocks the keys marked True",
        "In this assignment True means 'this query may attend to this key'. You treated True "
        "as 'blocked': the maths is fine, only the mask is read the other way round (some "
        "libraries do read True as blocked, which is why the two get mixed up).",
        ("A-edge-6", "B-15"),
        variants_of("mask", "inverted", only=ATTN_MHA),
        "the keys your mask blocks are exactly the ones marked True (allowed)",
        in_conventions=MappingProxyType({
            "mask:block": Wording(
                "Your mask lets through the keys marked True",
                "In this course True means 'this key is blocked'. You treated True as 'may "
                "attend', the convention of other code you may have seen: fill the scores where "
                "the mask is True with -inf, not where it is False.",
                "Fill with -inf where the mask is True: `scores.masked_fill(mask, float('-inf'))`.",
                "the keys your mask blocks are exactly the ones marked False (in this course: may"
                " attend)"),
            "mask:zero-blocks": Wording(
                "Your mask blocks the keys marked 1 instead of those marked 0",
                "In this course a 0 in the mask blocks the key: the scores where `mask == 0` are "
                "filled with a large negative number before the softmax. You blocked the keys "
                "marked 1, the ones that should be kept.",
                'Fill the scores where `mask == 0`: `scores.masked_fill(mask == 0, -1e9)`.',
                "the keys your mask blocks are exactly the ones marked 1 (in this course: kept)"),
            "mask:float-keep": Wording(
                "Your mask removes the keys marked 1 instead of those marked 0",
                "In this course the mask is a float: 1 keeps a key, 0 removes it (add "
                "`(1 - mask) * -1e9` to the logits). You removed the keys marked 1.",
                'Add `(1 - mask) * -1e9` to the scores, so that the keys marked 0 are the ones removed.',
                "the keys your mask removes are exactly the ones marked 1 (in this course: kept)"),
            "mask:additive": Wording(
                "Your mask adds -inf where it should add 0",
                "In this course the mask is added to the scores: 0 where the query may attend, "
                "-inf where it may not. You blocked the keys the mask keeps.",
                'Add the mask to the scores as it is, `scores + mask`, without inverting it.',
                "the keys your mask blocks are exactly the ones it adds 0 to (allowed)"),
        }),
        fix=('Block where the mask is False, not where it is True: '
             '`np.where(mask, scores, -np.inf)` keeps the scores where the mask is True and '
             'blocks the rest.'),
        stages=('masked',),
        rewrites=(edits.swap_branches,),
    ),
    Misconception(
        "mask-ignored",
        "You accept a mask but never apply it",
        "With a mask, blocked keys must get zero weight. Your output is the same with and without "
        "the mask.",
        ("A-edge-6",),
        variants_of("mask", "ignored", only=ATTN_MHA),
        "your output with the mask equals your output without it",
        fix=('When a mask is given, set the blocked scores to -inf before the softmax: '
             '`scores = np.where(mask, scores, -np.inf)`.'),
        stages=('masked', 'softmax', 'exponentials', 'output'),
        rewrites=(edits.apply_mask,),
    ),
    Misconception(
        "scale-by-dmodel",
        "You scale by sqrt(d_model) instead of the per-head sqrt(d_k)",
        "Each head attends in its own d_k = d_model / num_heads dimensional subspace, so its dot "
        "products have variance d_k, and each head divides by its own sqrt(d_k). Dividing by "
        "sqrt(d_model) over-shrinks every head's scores. (Popular lecture code scales by the "
        "full channel count; that is the bug it taught.)",
        ("A-err-7", "B-16"),
        variants_of("scale", "sqrt_dmodel", only=MHA_CSA),
        "your scores are divided by sqrt(d_model) = {sqrt_dmodel}; each head should divide by "
        "sqrt(d_k) = {sqrt_dk} with d_k = d_model / num_heads = {d_k}",
        fix=('Divide by `np.sqrt(d_k)` with the per-head width `d_k = d_model // '
             'num_heads`, not by `np.sqrt(d_model)`.'),
        stages=('scaled', 'weights'),
        rewrites=(edits.divide_by_head_width,),
    ),
    Misconception(
        "heads-not-split",
        "You run one attention over the full d_model instead of one per head",
        "Multi-head attention splits the projected Q, K and V into num_heads slices of d_k "
        "features and runs attention in each slice separately, so each head can attend to "
        "different positions. One attention over all d_model features is a single head, whatever "
        "scale it uses.",
        ("A-tf-9", "A-why-4"),
        variants_of("split", "none", only=MHA_CSA),
        "your output equals a single attention over all d_model = {d_model} features; the "
        "{h} heads should each attend separately",
        absorbs=MappingProxyType({"scale": frozenset({"sqrt_dmodel"})}),
        fix=('Reshape the projected Q, K and V to (..., num_heads, n, d_k), run attention '
             'in every head, then merge the heads back.'),
        stages=('scores', 'scaled'),
    ),
    Misconception(
        "split-without-transpose",
        "You split heads by a plain reshape, mixing tokens across heads",
        "Reshaping (n, d_model) straight to (num_heads, n, d_k) does not cut each token's "
        "features into heads: it regroups the flat memory, so a 'head' holds pieces of several "
        "tokens. Reshape to (n, num_heads, d_k) first, then move the head axis before n.",
        ("A-tf-9",),
        variants_of("split", "reshape", only=MHA_CSA),
        "your heads hold rows of the reshaped (n, d_model) memory rather than feature slices "
        "of each token",
        fix=('Split with `x.reshape(*batch, n, num_heads, d_k)`, then swap the token and '
             'head axes: `np.swapaxes(x, -2, -3)`.'),
        stages=('q_heads', 'k_heads', 'v_heads'),
        rewrites=(edits.split_then_transpose,),
        also=("k_heads", "v_heads"),
    ),
    Misconception(
        "missing-output-projection",
        "You never apply the output projection W_o",
        "After the heads are concatenated, multi-head attention mixes them with the learned "
        "output projection W_o. Without it the heads' outputs stay side by side and W_o is "
        "never learned.",
        ("A-tf-3", "A-tf-9"),
        variants_of("output_projection", "none", only=MHA_CSA),
        "your output equals the concatenated heads, without the final @ W_o",
        fix='Multiply the merged heads by W_o before returning them: `merged @ W_o`.',
        stages=('output',),
        rewrites=(edits.project_output,),
    ),
    Misconception(
        "wrong-projection",
        "You project Q, K or V with the wrong matrix (or not at all)",
        "Queries, keys and values are three different learned views of the input: Q = X_q @ W_q, "
        "K = X_kv @ W_k, V = X_kv @ W_v. Reusing one matrix for another role, or skipping a "
        "projection, makes the three roles collapse.",
        ("A-tf-6", "A-why-7", "B-8"),
        variants_of("proj_matrices", *_WRONG_PROJECTIONS, only=MHA)
        # in self-attention, W_q and W_k swapped are K Q^T: scores-transposed
        + variants_of("proj_matrices", *_WRONG_PROJECTIONS[1:], only=CSA),
        "your output matches Q, K, V projected with {projection}",
        fix=('Project each input with its own matrix: `Q = X_q @ W_q`, `K = X_kv @ W_k`, '
             '`V = X_kv @ W_v`.'),
        stages=('q', 'k', 'v', 'q_heads', 'k_heads', 'v_heads'),
        rewrites=(edits.own_matrix,),
    ),
    Misconception(
        "projection-transposed",
        "You project with X @ W.T instead of X @ W",
        "Here the projections multiply on the right: Q = X_q @ W_q. `torch.nn.Linear` stores its "
        "weight as (out, in) and computes x @ W.T; you followed that convention. With square "
        "matrices both run, so only the values tell them apart.",
        ("B-8",),
        variants_of("projection", "transposed", "transposed_qkv", only=MHA_CSA),
        "your output equals the one computed with every W transposed (the nn.Linear layout)",
        in_conventions=MappingProxyType({
            "projections:linear": Wording(
                "You project with X @ W instead of X @ W.T",
                "In this course the weights are in `nn.Linear` layout, (out, in), and a "
                "projection is `x @ W.T` (what `F.linear(x, W)` computes). You multiplied by W "
                "itself; with square matrices both run, so only the values tell them apart.",
                "Use the nn.Linear layout: `x @ W.T` (what `F.linear(x, W)` computes), not "
                "`x @ W`.",
                "your output equals the one computed with every W used as given, x @ W, not the "
                "nn.Linear x @ W.T"),
        }),
        fix="Multiply by the matrices as given, on the right: `X_q @ W_q`, not `X_q @ W_q.T`.",
        stages=('q', 'k', 'v', 'q_heads', 'k_heads', 'v_heads'),
        rewrites=(edits.untransposed,),
        also=("k", "v", "k_heads", "v_heads", "output"),
    ),
    Misconception(
        "key-not-transposed",
        "You compute Q K instead of Q K^T",
        "The score of query i and key j is the dot product of row i of Q with row j of K, which "
        "is Q @ K^T (n x m). Q @ K only runs when K happens to be square (m = d_k), and then it "
        "multiplies queries with columns of K, which are not keys.",
        ("A-err-2", "B-12"),
        variants_of("scores", "qk", only=ATTENTIVE),
        "with m = d_k = {m} your scores are Q @ K, not Q @ K^T",
        fix=('Swap the last two axes of K before the product: `Q @ np.swapaxes(K, -1, '
             '-2)`.'),
        stages=('scores', 'scaled'),
        rewrites=(edits.transpose_keys,),
    ),
    Misconception(
        "scale-by-seq-len",
        "You scale by the square root of a sequence length instead of d_k",
        "The scale depends on the feature width d_k = Q.shape[-1], not on how many queries or "
        "keys there are. `K.shape[0]` or `K.shape[1]` is a sequence length (or the batch) "
        "as soon as the inputs have a batch dimension; read d_k from the last axis.",
        ("B-11", "B-19"),
        variants_of("scale", "sqrt_m", "sqrt_n", only=ATTENTIVE)
        + variants_of("scale", "sqrt_k_shape0", "sqrt_k_shape1", only=ATTN),
        "your scores are divided by the square root of a length (m = {m}, n = {n}); the correct "
        "divisor is sqrt(d_k) = {sqrt_dk}",
        fix=('Divide by `np.sqrt(d_k)` with `d_k = Q.shape[-1]`, the feature width on the '
             'last axis, not a sequence length.'),
        stages=('scaled', 'weights'),
        rewrites=(edits.divide_by_head_width,),
    ),
    Misconception(
        "mask-transposed",
        "You apply the mask as (key, query) instead of (query, key)",
        "mask[..., i, j] says whether query i may attend to key j: rows are queries, columns are "
        "keys, like the score matrix. Transposing it (for a causal mask: attending to the "
        "future instead of the past) blocks the wrong pairs.",
        ("A-edge-6", "B-14"),
        variants_of("mask", "transposed", only=ATTN_MHA),
        "with n = m = {n} your weights follow mask.T instead of mask",
        fix=('Use the mask as given: it is (n, m), one row per query, like the scores; do '
             'not transpose it.'),
        # a prefix mask blocks its last key for every query: 0/0 over the queries
        ignores=frozenset({"prefix"}),
        stages=('masked',),
        rewrites=(edits.mask_as_given,),
    ),
    Misconception(
        "mask-as-additive-bias",
        "You add the boolean mask to the scores instead of blocking masked keys",
        "A boolean mask is not a bias: adding it (True = 1) raises the allowed scores by 1 and "
        "leaves the blocked keys in play. Use it to select: blocked scores become -inf. "
        "(Additive masks exist, but they hold 0 and -inf, and PyTorch treats a float mask "
        "differently from a boolean one.)",
        ("B-15", "B-30"),
        variants_of("mask", "additive", "additive_before_scale", only=ATTENTIVE),
        "your scores equal scores + mask (True counted as 1); blocked keys keep their weight",
        fix=('Use the boolean mask to block, not as a number to add: `np.where(mask, '
             'scores, -np.inf)`.'),
        stages=('masked',),
        rewrites=(edits.block_with_mask,),
    ),
    Misconception(
        "scale-by-num-heads",
        "You scale by sqrt(num_heads)",
        "Each head divides its scores by sqrt(d_k), where d_k = d_model / num_heads is the "
        "head's own width. The number of heads is not the width of a dot product.",
        ("B-16",),
        variants_of("scale", "sqrt_heads", only=MHA_CSA),
        "your scores are divided by sqrt(num_heads) = {sqrt_h}; each head should divide by "
        "sqrt(d_k) = {sqrt_dk}",
        fix=('Divide by `np.sqrt(d_k)` with `d_k = d_model // num_heads`, not by '
             '`np.sqrt(num_heads)`.'),
        stages=('scaled', 'weights'),
        rewrites=(edits.divide_by_head_width,),
    ),
    Misconception(
        "merge-without-transpose",
        "You merge heads back by a plain reshape, mixing tokens",
        "The heads come out as (..., num_heads, n, d_k). To concatenate each token's head "
        "outputs, move the head axis back after n, (..., n, num_heads, d_k), and only then "
        "reshape to (..., n, d_model). A plain reshape glues rows of different tokens together.",
        ("A-tf-9",),
        variants_of("merge", "reshape", only=MHA_CSA),
        "your output rows mix several tokens of one head instead of all heads of one token",
        fix=('Swap the head and token axes back before the reshape: `np.swapaxes(heads, '
             '-2, -3).reshape(*batch, n, d_model)`.'),
        stages=('merged',),
        rewrites=(edits.transpose_then_merge,),
    ),
    Misconception(
        "kv-from-query-input",
        "You project K and V from X_q instead of X_kv",
        "In cross-attention the queries come from one sequence (X_q) and the keys and values from "
        "the other (X_kv). Taking K and V from X_q turns every call into self-attention on X_q.",
        ("A-tf-7", "B-22"),
        variants_of("kv_source", "x_q", only=MHA),
        "with X_q != X_kv your output equals self-attention on X_q",
        fix='Project K and V from X_kv, not X_q: `K = X_kv @ W_k`, `V = X_kv @ W_v`.',
        stages=('k', 'v', 'k_heads', 'v_heads'),
        rewrites=(edits.keys_from_kv,),
        also=("v", "v_heads"),
    ),
    Misconception(
        "mask-misbroadcast",
        "Your (..., n, m) mask is aligned with the wrong axes of the (..., h, n, m) scores",
        "The scores of multi-head attention have a head axis the mask does not have. Insert it "
        "(mask[..., None, :, :]) so that every head of batch item b uses mask b. Broadcasting "
        "the mask as it is lines its batch axis up with the head axis, which only runs when the "
        "batch size equals the number of heads, and then gives head b the mask of item b. With "
        "the heads folded into the batch axis, (B * h, n, m), the mask must be repeated the "
        "same way: each item's mask h times in a row, next to its own heads, not the whole "
        "stack of masks h times over.",
        ("A-edge-6",),
        variants_of("mask_heads", "misbroadcast", only=MHA),
        "with batch = num_heads = {h}, head b of every item uses the mask of item b",
        fix=("Give the mask a head axis before applying it: `np.expand_dims(mask, -3)` (with "
             "the heads folded into the batch, repeat each item's mask h times in a row)."),
        stages=('masked',),
    ),
    Misconception(
        "mutates-input",
        "Your function modifies an input array in place",
        "Operations such as `Q /= np.sqrt(d_k)` or `scores[~mask] = ...` on a view of an input "
        "write into the caller's array: calling the function twice, or using Q afterwards, gives "
        "different results. Write `Q = Q / np.sqrt(d_k)` to get a new array.",
        (),
        (),
        "after the call, {input} differs from what was passed in",
        detector="input-mutation",
        fix=('Compute into new arrays (`x = x - m`, or start with `x = x.copy()`) instead '
             'of changing an input in place (`x -= m`, `x[...] = ...`).'),
        in_conventions=MappingProxyType({
            "task:softmax": Wording(
                "Your function modifies an input array in place",
                "An operation such as `x -= x.max(axis=axis, keepdims=True)` or `x[...] = ...` "
                "writes into the caller's array: calling the function twice on the same array, "
                "or using it afterwards, gives different results. Write "
                "`x = x - x.max(axis=axis, keepdims=True)` to get a new array.",
                "Compute into a new array (`x = x - m`) instead of changing the input in place "
                "(`x -= m`)."),
        }),
        rewrites=(edits.new_array,),
    ),
    Misconception(
        "no-batch-support",
        "Right on 2-D inputs, wrong or failing with leading batch dimensions",
        "Inputs may carry leading batch (and head) dimensions, (..., n, d_k). Use operations that "
        "act on the last two axes: `np.swapaxes(K, -1, -2)` or `K.swapaxes(-1, -2)` instead of "
        "`K.T` (which reverses every axis), `axis=-1` instead of a fixed axis number, and "
        "`shape[-1]` instead of `shape[1]`.",
        ("B-20",),
        variants_of("normalize", "axis0", "axis1", only=ATTN),
        "on 2-D inputs you are right, but on {batched_shape} inputs you are not",
        detector="batch",
        fix=('Use `np.swapaxes(K, -1, -2)` instead of `K.T`, `axis=-1` instead of a fixed '
             'axis number, and `shape[-1]` instead of `shape[1]`.'),
        in_conventions=MappingProxyType({
            "task:rope": Wording(
                "Right on 2-D inputs, wrong or failing with leading batch dimensions",
                "RoPE is applied to arrays of shape (..., n, d): one sequence, or a batch of "
                "them, or every head at once. Everything it makes and indexes follows the last "
                "two axes: the positions run along axis -2, the pairs along axis -1 "
                "(`x[..., 0::2]`), and the output has the input's own shape, whatever comes "
                "before them.",
                "Index the features from the end (`x[..., 0::2]`, `x.shape[-2]`) and make the "
                "output the input's shape (`np.empty_like(x)`), not `(n, d)`."),
        }),
        rewrites=(edits.last_two_axes,),
    ),
)
