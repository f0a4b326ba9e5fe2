"""What each question-bank item (``shared/question-bank/INDEX.md``) is about, in a few plain words
of our own: a report's "read more" line names the item and says why it is worth reading.

The IDs are the bank's and never change; the words are ours (the bank is cited, never pasted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

ITEMS: Mapping[str, str] = MappingProxyType({
    "A-tf-1": "attention looks at all tokens at once, not one after another",
    "A-tf-2": "softmax weights are positive and sum to 1",
    "A-tf-3": "the weights are computed from the inputs; only the projections are learned",
    "A-tf-4": "reordering the tokens only reorders the outputs",
    "A-tf-5": "the scale softens the weights without changing which key wins",
    "A-tf-6": "a token's query, key and value come from three different projections",
    "A-tf-7": "self-attention takes Q, K and V from one sequence; cross-attention does not",
    "A-tf-8": "a query and a key score high when they point the same way",
    "A-tf-9": "every head has projections of its own",
    "A-tf-10": "attention links far-apart positions in one step",
    "A-err-1": "which axis the softmax runs along",
    "A-err-2": "the score matrix has one entry per query-key pair",
    "A-err-3": "why the scale is not optional when d_k is large",
    "A-err-4": "attention alone does not know the order of the tokens",
    "A-err-5": "the output blends the values, not the keys",
    "A-err-6": "why the divisor is sqrt(d_k), not d_k",
    "A-err-7": "each head works in a slice of d_model, d_k = d_model / h",
    "A-why-1": "why a dot product measures relevance",
    "A-why-2": "why softmax and not a plain division by the sum",
    "A-why-3": "how an unscaled softmax stops the gradients",
    "A-why-4": "why several heads help",
    "A-why-5": "attention compared with a recurrent network on long inputs",
    "A-why-6": "why attention must be told the positions: to it the rows are an unordered set",
    "A-why-7": "why queries, keys and values get separate projections",
    "A-edge-1": "identical keys give equal weights",
    "A-edge-2": "one much larger score takes almost all the weight",
    "A-edge-3": "with a single key the output is its value",
    "A-edge-4": "the same token at two places gives the same output",
    "A-edge-5": "all-zero scores give a plain average of the values",
    "A-edge-6": "masking means -inf before the softmax, so the weight is exactly 0",
    "A-edge-7": "a large d_k without scaling makes the weights one-hot",
    "B-1": "scaling changes how sharp the weights are, not their order",
    "B-2": "every softmax row is a distribution: it sums to 1",
    "B-3": "identical keys get equal weights",
    "B-4": "the scale 1/sqrt(d_k) is a constant, not a learned number",
    "B-5": "a wider d_k is not simply better",
    "B-6": "the output has the value width d_v; d_k disappears in the product",
    "B-7": "more floating-point precision does not fix a saturated softmax",
    "B-8": "Q, K and V come from the inputs through three different matrices",
    "B-9": "a zero dot product means unrelated, not opposite",
    "B-10": "subtracting the row maximum leaves the softmax unchanged",
    "B-11": "the dot product's spread is sqrt(d_k), so that is the divisor",
    "B-12": "the score matrix is n x m",
    "B-13": "one softmax per row; a softmax over everything makes the rows compete",
    "B-14": "Q K^T and K Q^T are not interchangeable",
    "B-15": "mask with -inf before the softmax; zeroing afterwards breaks the sums",
    "B-16": "each head scales by the square root of its own width",
    "B-17": "dot products are cheap and easy to differentiate",
    "B-18": "a saturated softmax has almost no gradient",
    "B-19": "why the dot product's variance is d_k",
    "B-20": "leading batch (and head) axes ride along in every operation",
    "B-21": "keys decide where to look, values carry what is found",
    "B-22": "self- and cross-attention differ only in where Q, K and V come from",
    "B-23": "shuffling the tokens shuffles the outputs the same way",
    "B-24": "equal scores give a plain average of the values",
    "B-25": "a row with every key masked has no defined softmax",
    "B-26": "a single key gets all the weight",
    "B-27": "without scaling the softmax collapses to one-hot",
    "B-28": "a zero query scores every key the same",
    "B-29": "identical queries give identical output rows",
    "B-30": "a very negative score gets almost zero weight: how masking works",
})


#: each item's point, in one sentence of our own (the bank's text is the course's; ``attention-grader
#: explain ITEM`` shows this, and says where the course keeps the bank)
POINTS: Mapping[str, str] = MappingProxyType({
    "A-tf-1": (
        "Self-attention is not sequential: one product of the queries with the keys scores "
        "every pair of positions at once, so every token is computed in parallel."),
    "A-tf-2": (
        "The softmax makes each row of weights positive and adding up to 1, so every output "
        "is a weighted average of the values."),
    "A-tf-3": (
        "The attention weights are recomputed from each input; what training learns are the "
        "four projection matrices."),
    "A-tf-4": (
        "Attention without positions is permutation-equivariant: reordering the input tokens "
        "reorders the output rows the same way and changes nothing else."),
    "A-tf-5": (
        "Dividing all the scores of a row by the same positive number keeps their order, so "
        "the most-attended key stays the same; only the sharpness of the weights changes."),
    "A-tf-6": (
        "A token's query, key and value are three different projections of it, so they "
        "generally differ."),
    "A-tf-7": (
        "In self-attention the queries, keys and values all come from one sequence; in cross-"
        "attention the queries come from one and the keys and values from another."),
    "A-tf-8": (
        "A query and a key score high when they point in similar directions, which is why the"
        " dot product works as a relevance score."),
    "A-tf-9": (
        "Each head projects with its own matrices into its own subspace, so the heads can "
        "attend to different things."),
    "A-tf-10": (
        "Attention links any two positions in one step, so distant information is not diluted"
        " as it is through a recurrent state."),
    "A-err-1": (
        "The softmax normalises over the keys (each row of the score matrix), never over the "
        "features or the queries."),
    "A-err-2": (
        "The score matrix Q K^T has one entry per query-key pair, (n, m), not one per "
        "feature."),
    "A-err-3": (
        "Scaling is needed precisely when d_k is large: unscaled scores spread out with d_k "
        "and saturate the softmax."),
    "A-err-4": (
        "Seeing every token at once does not tell attention their order; positions have to be"
        " added to the inputs."),
    "A-err-5": (
        "The output blends the values; the keys only decide how much of each value is taken."),
    "A-err-6": (
        "The scale is 1/sqrt(d_k), the standard deviation of a dot product of d_k unit-"
        "variance terms; dividing by d_k itself shrinks the scores too much."),
    "A-err-7": (
        "Each head works on a slice of width d_k = d_model / h of the projections, not on the"
        " whole d_model."),
    "A-why-1": (
        "A dot product is a cheap, differentiable measure of how aligned a query and a key "
        "are."),
    "A-why-2": (
        "The softmax exponentiates before dividing, so the weights stay positive even when "
        "scores are negative, which a plain division by the sum does not ensure."),
    "A-why-3": (
        "A saturated softmax has almost no gradient, and scaling the scores keeps it out of "
        "that regime."),
    "A-why-4": "Several heads let a layer follow several patterns of relevance at once.",
    "A-why-5": (
        "Unlike a recurrent network, attention reaches every earlier position directly and in"
        " parallel, however long the input."),
    "A-why-6": (
        "To attention alone the inputs are an unordered set, so position information has to "
        "be added (or rotated in) for order to matter."),
    "A-why-7": (
        "Separate projections let a token ask (query), be found (key) and contribute (value) "
        "in different ways."),
    "A-edge-1": (
        "When every key is the same, every key gets the same weight and the output is the "
        "mean of the values."),
    "A-edge-2": (
        "When one score is far above the others, its key takes nearly all the weight and the "
        "output is nearly its value."),
    "A-edge-3": "With a single key, its weight is 1 and the output is exactly its value.",
    "A-edge-4": (
        "Without positional information, the same token at two positions gets the same "
        "output."),
    "A-edge-5": (
        "When all scores are equal (zero, say), the weights are uniform and the output is the"
        " plain mean of the values."),
    "A-edge-6": (
        "A mask works by setting blocked scores to -inf before the softmax, so those keys get"
        " a weight of exactly 0 and each row still sums to 1."),
    "A-edge-7": (
        "A large d_k without scaling makes the weights nearly one-hot and the gradients "
        "nearly zero."),
    "B-1": (
        "Scaling every score by the same factor keeps their order (the argmax does not move) "
        "and only changes how sharp the weights are."),
    "B-2": "Each row of weights is a probability distribution over the keys: it sums to 1.",
    "B-3": "Identical keys get equal weights, though the values behind them may still differ.",
    "B-4": (
        "The factor 1/sqrt(d_k) is a constant fixed by the variance argument, not a learned "
        "parameter."),
    "B-5": (
        "A larger d_k is not simply better: it widens the spread of the scores, and many "
        "narrow heads are preferred to one wide head."),
    "B-6": (
        "The output has the values' width: (n, m) weights times (m, d_v) values give (n, "
        "d_v), with d_k gone inside the scores."),
    "B-7": (
        "More floating-point precision avoids overflow but does not revive the gradients of a"
        " saturated softmax."),
    "B-8": (
        "Queries, keys and values come from the same input through three different weight "
        "matrices."),
    "B-9": "A zero dot product means the vectors are orthogonal (unrelated), not opposite.",
    "B-10": (
        "The softmax does not change when the same constant is subtracted from a row, which "
        "is why subtracting the row maximum is safe."),
    "B-11": (
        "A dot product of d_k unit-variance terms has variance d_k and standard deviation "
        "sqrt(d_k), the divisor that brings the scores back to unit spread."),
    "B-12": "The scores Q K^T form an (n, m) matrix: one per query and key.",
    "B-13": (
        "The softmax runs row by row; one softmax over the whole matrix would make unrelated "
        "queries compete for weight."),
    "B-14": (
        "Swapping the roles gives K Q^T, the transpose of Q K^T: queries and keys do "
        "different jobs and cannot be exchanged."),
    "B-15": (
        "Mask with -inf before the softmax so the row renormalises; zeroing weights after it "
        "leaves rows that no longer sum to 1."),
    "B-16": (
        "In multi-head attention each head scales by the square root of its own width d_k, "
        "not of d_model."),
    "B-17": (
        "The dot product is cheap, differentiable and maps directly onto fast matrix "
        "multiplication."),
    "B-18": "Where the softmax is saturated its gradient is nearly zero, so learning stalls.",
    "B-19": (
        "The variance of a dot product is d_k because it sums d_k independent products whose "
        "variances add."),
    "B-20": (
        "One batched product computes the scores of every query at once: the same maths as a "
        "loop, in the form matrix hardware runs fast."),
    "B-21": (
        "Keys decide where to look and values carry what is found, so the output mixes the "
        "values."),
    "B-22": (
        "Self- and cross-attention compute the same thing; only the sources of Q, K and V "
        "differ."),
    "B-23": (
        "Permuting the tokens permutes the outputs the same way, so order has to be injected "
        "by a positional encoding."),
    "B-24": (
        "Equal scores give each of the m keys weight 1/m, and the output is the plain average"
        " of the values."),
    "B-25": (
        "A row whose keys are all masked has no defined softmax (0/0), so a query must always"
        " see at least one key."),
    "B-26": "A single key always gets weight 1, so the output is its value whatever the score.",
    "B-27": (
        "Without scaling, the spread of the scores grows with d_k and the softmax collapses "
        "towards one-hot."),
    "B-28": (
        "A zero query scores every key the same, so its output is the uniform average of the "
        "values."),
    "B-29": "Identical queries get identical weights and therefore identical output rows.",
    "B-30": (
        "A very negative score gets almost no weight, which is exactly how masking removes a "
        "key."),
})


#: where a course keeps its question bank: the folder of ``INDEX.md`` (every item by ID) and, by
#: the ID's first letter, the file that holds the item
BANK_INDEX = "INDEX.md"
BANK_FILES = {"A": "bank-a-attention.txt", "B": "bank-b-sdpa.txt"}


def where_kept(item_id: str) -> str:
    """Where a course keeps the item's full text, said for a student."""
    file = BANK_FILES.get(item_id[:1])
    inside = f"; {item_id} is in its {file}" if file else ""
    return (f"The question bank itself is your course's, not part of this repository: the course "
            f"keeps it with its own materials, in the folder whose {BANK_INDEX} lists every "
            f"item by its ID{inside}. Ask your course staff where they share it.")


def read_more(item_ids: Sequence[str]) -> str:
    """``item: what it is about; ...`` for a report's "read more" line."""
    return "; ".join(f"{item} ({ITEMS[item]})" if item in ITEMS else item for item in item_ids)
