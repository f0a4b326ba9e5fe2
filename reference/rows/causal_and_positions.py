"""The catalogue rows of the causal mask and of position information (SPEC section 2, "IDs of
the rest of the attention unit"): the causal mask, the sinusoidal positional encoding and RoPE,
alone and inside causal self-attention."""

from __future__ import annotations

from types import MappingProxyType

from reference import edits
from reference.misconception import Misconception, Wording, variants_of

CM = ("causal_mask",)
CSA = ("causal_self_attention",)
CM_CSA = (*CM, *CSA)
PE = ("positional_encoding",)
ROPE = ("rope",)
ROPE_CSA = (*ROPE, *CSA)

ROWS: tuple[Misconception, ...] = (
    Misconception(
        "causal-mask-inverted",
        "Your causal mask marks the blocked keys instead of the allowed ones",
        "A causal mask in this convention says where a query may look: True (or 1) on the keys "
        "at or before the query's position, False after it. Yours is the complement: True on "
        "the future keys, which is what a mask of blocked positions holds (`triu(..., k=1)`). "
        "Each query would then see only the future, and the last one nothing at all.",
        ("A-edge-6", "B-15"),
        variants_of("mask_polarity", "inverted", only=CM_CSA),
        "your mask is the complement of the causal one: it marks the future keys and blocks "
        "the past and the token itself",
        fix="Mark the keys a query may see: `np.tril(np.ones((n, m), dtype=bool), k=m - n)`, "
            "without `~` or `1 -` (`triu(..., k=1)` is its complement).",
        question_bank_in=MappingProxyType({"task:causal_mask": ()}),
        stages=("causal_mask", "masked", "output"),
        rewrites=(edits.complement_mask, edits.swap_branches),
    ),
    Misconception(
        "causal-mask-transposed",
        "Your causal mask lets each query see the future instead of the past",
        "Rows of the mask are queries and columns are keys. A decoder's query may attend to the "
        "keys at or before its own position: the lower triangle, `j <= i`. The upper triangle "
        "lets every query read the tokens that come after it, which is exactly the information "
        "a language model must predict.",
        ("A-edge-6",),
        variants_of("mask_direction", "future", only=CM_CSA),
        "your mask keeps the keys after each query's position (the upper triangle) instead of "
        "those before it",
        fix="Keep the lower triangle: `np.tril(...)` (keys j <= i), not `np.triu(...)`.",
        question_bank_in=MappingProxyType({"task:causal_mask": ()}),
        stages=("causal_mask", "masked", "output"),
        rewrites=(edits.lower_triangle, edits.untransposed_triangle),
    ),
    Misconception(
        "causal-mask-blocks-self",
        "Your causal mask blocks each token from itself",
        "A token may attend to itself: the diagonal belongs to the allowed part of a causal "
        "mask (`np.tril(..., k=0)`, or `triu(..., k=1)` for the blocked part). Blocking the "
        "diagonal too leaves the first token with no key at all (a row of -inf: NaN after the "
        "softmax), and every other token without its own value.",
        ("A-edge-6", "A-edge-3"),
        variants_of("mask_diagonal", "blocks_self", only=CM_CSA),
        "your mask blocks the diagonal: query i cannot see key i, and the first query sees "
        "nothing",
        fix="Include the diagonal: `np.tril(ones, k=0)` keeps it (a blocked mask is "
            "`np.triu(ones, k=1)`, not `k=0`).",
        question_bank_in=MappingProxyType({"task:causal_mask": ("B-25",)}),
        stages=("query_positions", "key_positions", "causal_mask", "masked", "output"),
        rewrites=(edits.diagonal_up,),
    ),
    Misconception(
        "causal-mask-sees-next",
        "Your causal mask lets each token see the next one",
        "The diagonal is the last key a query may see. Shifting the triangle one step up "
        "(`np.tril(ones, k=1)`, or a blocked mask `triu(..., k=2)`) lets every token read the "
        "token right after it, so a model trained with it learns to copy the answer.",
        ("A-edge-6",),
        variants_of("mask_diagonal", "sees_next", only=CM_CSA),
        "your mask also keeps the key right after each query's position",
        fix="Stop the triangle at the diagonal: `np.tril(ones, k=0)` (blocked part "
            "`np.triu(ones, k=1)`).",
        question_bank_in=MappingProxyType({"task:causal_mask": ()}),
        stages=("query_positions", "key_positions", "causal_mask", "masked", "output"),
        rewrites=(edits.diagonal_down,),
    ),
    Misconception(
        "causal-mask-top-left",
        "With more keys than queries, your causal mask is aligned at the top left",
        "When m > n (a KV cache holds m - n earlier tokens), the n queries are the last n "
        "positions: query i sits at position m - n + i and may see every key up to there. "
        "Aligning the triangle at the top left (query i sees keys 0..i) hides the most recent "
        "keys from every query. `np.tril(ones((n, m)), k=m - n)` puts the diagonal where it "
        "belongs; with m = n both agree, which is why square tests never show it.",
        ("A-edge-6",),
        variants_of("mask_align", "top_left", only=CM),
        "with n = {n} queries and m = {m} keys, your query i sees keys 0..i instead of "
        "0..m - n + i",
        fix="Offset the diagonal by the m - n cached positions: `np.tril(np.ones((n, m)), "
            "k=m - n)`.",
        question_bank_in=MappingProxyType({"task:causal_mask": ()}),
        stages=("query_positions", "output"),
        rewrites=(edits.bottom_right,),
    ),
    Misconception(
        "causal-mask-missing",
        "Your causal self-attention applies no causal mask",
        "A decoder predicts each token from the ones before it, so position i may attend only "
        "to positions j <= i. Without the causal mask every position reads the whole sequence, "
        "the future included: changing a later token changes earlier outputs.",
        ("A-edge-6", "A-tf-1"),
        variants_of("causal", "missing", only=CSA),
        "your outputs use the future: position i attends to keys after it",
        fix="Before the softmax, block the keys after each query: "
            "`scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)`.",
        stages=("masked", "softmax", "weights", "output"),
        rewrites=(edits.add_causal_mask,),
    ),
    Misconception(
        "pe-sin-cos-swapped",
        "Your positional encoding has cos on the even features and sin on the odd ones",
        "In the sinusoidal encoding the even feature 2i of a pair holds the sine and the odd "
        "feature 2i + 1 the cosine of the same angle. Swapped, position 0 encodes as "
        "(1, 0, 1, 0, ...) instead of (0, 1, 0, 1, ...), and the encoding no longer matches "
        "the model it is meant to feed.",
        ("A-why-6",),
        variants_of("pe_trig", "swapped", only=PE),
        "your even features are cosines and your odd features sines",
        fix="Put `np.sin` on the even features (`pe[:, 0::2]`) and `np.cos` on the odd ones "
            "(`pe[:, 1::2]`).",
        stages=("output",),
        rewrites=(edits.swap_sin_cos,),
    ),
    Misconception(
        "pe-not-interleaved",
        "Your positional encoding puts all sines first and all cosines after them",
        "This encoding interleaves: feature 2i is the sine and feature 2i + 1 the cosine of pair "
        "i's angle. Concatenating `[sin | cos]` is another real layout (tensor2tensor's), but "
        "not this one: every feature after the first ends up in the wrong column.",
        ("A-why-6",),
        variants_of("pe_layout", "halves", only=PE),
        "your first d_model / 2 = {half} features are sines and the rest cosines, instead of "
        "alternating",
        fix="Interleave the two: `pe[:, 0::2] = np.sin(angles)` and `pe[:, 1::2] = "
            "np.cos(angles)` (or stack them on a last axis and reshape to (n, d_model)).",
        stages=("output",),
        rewrites=(edits.interleave,),
    ),
    Misconception(
        "pe-exponent-uses-feature",
        "Your frequencies use the feature index where they should use the pair index",
        "The sine and the cosine of one pair share one frequency, 1 / 10000**(2i / d_model), "
        "where i is the pair (feature j // 2). Using the feature j itself (`2 * j / d_model`, "
        "or `j / d_model`) gives the two features of a pair different frequencies, and the "
        "pairs are no longer rotations of each other; a loop whose i steps 0, 2, 4, ... is "
        "already 2 * (pair), so `2 * i / d_model` there counts the two twice.",
        ("A-why-6",),
        variants_of("pe_exponent", "feature_twice", "feature", "pair_twice", only=PE),
        "your frequencies follow the feature index, not the pair's: features 2i and 2i + 1 "
        "should share the frequency 10000**(-2i / d_model)",
        fix="Use the pair index in the exponent: `2 * (j // 2) / d_model` for feature j (the "
            "same for its sine and its cosine).",
        stages=("pair_frequencies", "frequencies", "pair_angles", "angles", "output"),
        rewrites=(edits.pair_index,),
    ),
    Misconception(
        "pe-exponent-missing-two",
        "Your frequencies use i / d_model instead of 2i / d_model",
        "Pair i's frequency is 1 / 10000**(2i / d_model): the exponent runs from 0 to almost 1 "
        "over the d_model / 2 pairs. With i / d_model it only reaches 1/2, so the slowest "
        "wavelength is about 100 positions instead of 10000 and far positions start to look "
        "alike.",
        ("A-why-6",),
        variants_of("pe_exponent", "missing_two", only=PE),
        "your frequencies fall as 10000**(-i / d_model), half as fast as 10000**(-2i / d_model)",
        fix="Double the exponent: `10000 ** (2 * i / d_model)` with i the pair index.",
        stages=("pair_frequencies", "frequencies", "pair_angles", "angles", "output"),
        rewrites=(edits.double_exponent,),
    ),
    Misconception(
        "pe-frequency-inverted",
        "You multiply the position by 10000**(2i/d_model) instead of dividing",
        "The angle of pair i is position / 10000**(2i / d_model): the frequencies shrink from 1 "
        "towards 1/10000 so that the pairs cover wavelengths from 2 pi to about 63000 "
        "positions. Multiplying makes the frequencies grow instead, and the high pairs spin so "
        "fast that their values look random.",
        ("A-why-6",),
        variants_of("pe_frequency", "multiply", only=PE),
        "your angles grow with the pair index (position * 10000**(2i / d_model))",
        fix="Divide the position by the power: `pos / 10000 ** (2 * i / d_model)`.",
        stages=("pair_frequencies", "frequencies", "pair_angles", "angles", "output"),
        rewrites=(edits.divide_by_power,),
    ),
    Misconception(
        "pe-positions-from-one",
        "Your positions count from 1 instead of 0",
        "The first token is position 0: its encoding is sin(0) = 0 and cos(0) = 1 in every pair. "
        "Counting from 1 shifts every row by one position, so what the model learns to read as "
        "'first' is really 'second'.",
        ("A-err-4",),
        variants_of("pe_positions", "from_one", only=PE),
        "your row p holds the encoding of position p + 1",
        fix="Count positions from 0: `np.arange(n_positions)`, not "
            "`np.arange(1, n_positions + 1)`.",
        stages=("positions", "pair_angles", "angles", "output"),
        rewrites=(edits.positions_from_zero,),
    ),
    Misconception(
        "rope-halves-not-interleaved",
        "Your RoPE rotates the pairs (i, i + d/2) instead of (2i, 2i + 1)",
        "This RoPE rotates neighbouring features together: (x[2i], x[2i+1]) by angle "
        "p * theta**(-2i/d). Rotating feature i with feature i + d/2 ('rotate half', the "
        "layout some libraries use) is a different layout, and not the one this assignment "
        "asks for.",
        ("A-err-4", "A-why-6"),
        variants_of("rope_pairs", "halves", "interleaved_in_halves", "halves_partner",
                    only=ROPE_CSA),
        "your rotation pairs feature i with feature i + d/2 instead of 2i with 2i + 1",
        fix="Rotate neighbours, `x1, x2 = x[..., 0::2], x[..., 1::2]`: `out[..., 0::2] = x1 * "
            "cos - x2 * sin` and `out[..., 1::2] = x1 * sin + x2 * cos`.",
        stages=("q_rotated", "k_rotated", "output"),
        in_conventions=MappingProxyType({
            "pairs:halves": Wording(
                "Your RoPE rotates neighbouring features (2i, 2i + 1) instead of (i, i + d/2)",
                "This course rotates each feature i of the first half with feature i + d/2 "
                "of the second, pair i turning by p * theta**(-2i/d). Rotating neighbouring "
                "features is the other layout: equally valid, but not the one this course's "
                "model uses.",
                "Rotate the halves: `x1, x2 = x[..., :d // 2], x[..., d // 2:]`, then "
                "`torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)`.",
                "your rotation pairs neighbouring features instead of feature i with i + d/2"),
        }),
    ),
    Misconception(
        "rope-rotation-reversed",
        "Your RoPE rotates by minus the angle",
        "A rotation by angle a maps (x1, x2) to (x1 cos a - x2 sin a, x1 sin a + x2 cos a), "
        "the complex number x1 + i x2 times exp(i a). Turned by -a instead (the sine terms' "
        "signs swapped, or exp(-i a)), each pair turns the other way: relative positions come "
        "out with the wrong sign, and the embedding no longer matches this definition.",
        ("A-why-6",),
        variants_of("rope_sign", "reversed", only=ROPE_CSA),
        "your pairs turn by -a instead of a",
        fix="Use `x1 * cos - x2 * sin` for the first feature of a pair and "
            "`x1 * sin + x2 * cos` for the second.",
        stages=("rotations", "q_rotated", "k_rotated", "output"),
        rewrites=(edits.positive_angle,),
    ),
    Misconception(
        "rope-frequency-missing-two",
        "Your RoPE frequencies use theta**(-i/d) instead of theta**(-2i/d)",
        "Pair i turns at the frequency theta**(-2i/d): the exponent runs over the even numbers "
        "0, 2, ..., d - 2. With theta**(-i/d) the frequencies fall half as fast and the slow "
        "pairs that carry long-range position never get slow enough.",
        ("A-why-6",),
        variants_of("rope_frequency", "missing_two", only=ROPE_CSA),
        "your frequencies are theta**(-i/d), not theta**(-2i/d)",
        fix="Double the exponent: `theta ** (-2 * i / d)` for pair i (or "
            "`theta ** (-np.arange(0, d, 2) / d)`).",
        stages=("frequencies", "angles", "q_rotated", "k_rotated", "output"),
        rewrites=(edits.double_exponent,),
    ),
    Misconception(
        "rope-positions-ignored",
        "Your RoPE ignores the positions it is given",
        "`positions` says where each token sits: after a KV cache, in a packed sequence, or "
        "anywhere but 0..n-1. Rotating by 0..n-1 whatever `positions` holds gives every chunk "
        "the positions of the first one.",
        ("A-err-4",),
        variants_of("rope_positions", "ignored", only=ROPE),
        "with positions {positions} your rotation uses 0..{last}",
        fix="Use `positions` when it is given: `p = np.arange(n) if positions is None else "
            "np.asarray(positions)`.",
        stages=("positions", "angles", "output"),
        rewrites=(edits.given_positions,),
    ),
    Misconception(
        "rope-no-rotation-partner",
        "Your RoPE multiplies each feature by cos and sin without mixing in its partner",
        "A rotation mixes the two features of a pair: the new x1 needs x2 (x1 cos a - x2 sin a). "
        "Computing each feature from itself alone (x * cos + x * sin) only rescales it, so the "
        "pair's norm changes and no relative position survives in the dot products.",
        ("A-why-6",),
        variants_of("rope_partner", "none", "none_signed", only=ROPE_CSA),
        "each of your output features depends only on the same input feature",
        fix="Mix in the partner: a pair (a, b) becomes (`a * cos - b * sin`, "
            "`a * sin + b * cos`), with a = `x[..., 0::2]`, b = `x[..., 1::2]`.",
        stages=("q_rotated", "k_rotated", "output"),
    ),
    Misconception(
        "rope-on-values",
        "You rotate the values too",
        "RoPE encodes position into the comparison of a query with a key: only Q and K are "
        "rotated. The values carry the content that is averaged, and rotating them makes "
        "each output depend on the absolute positions of the tokens it reads.",
        ("A-tf-6",),
        # (with "before_split_qkv", both mistakes at once: one knob, two rows)
        variants_of("rope_at", "heads_qkv", "before_split_qkv", only=CSA),
        "your values are rotated as well as the queries and keys",
        fix="Apply RoPE to the queries and keys only: `q, k = rope(q), rope(k)`; leave `v` as "
            "it is.",
        stages=("v_rotated", "heads", "output"),
        at_call=True,
        rewrites=(edits.values_unrotated,),
    ),
    Misconception(
        "rope-before-head-split",
        "You rotate the full d_model projections before splitting heads",
        "Each head attends in its own d_k features, and RoPE's frequencies are defined over "
        "those: theta**(-2i/d_k) for pair i of a head. Rotating the (n, d_model) projections "
        "before the split gives the heads after the first the slow frequencies of the end of "
        "d_model instead of their own.",
        ("A-err-7",),
        variants_of("rope_at", "before_split", "before_split_qkv", only=CSA),
        "your rotation's frequencies run over d_model = {d_model}, not over each head's "
        "d_k = {d_k}",
        fix="Split into heads first, then rotate each head's queries and keys over its d_k "
            "features.",
        stages=("q_rotated", "k_rotated", "q_heads", "k_heads", "scores", "output"),
        at_call=True,
    ),
)
