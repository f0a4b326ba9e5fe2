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
    "A-why-6": "why positions must be added to the inputs",
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


def read_more(item_ids: Sequence[str]) -> str:
    """``item: what it is about; ...`` for a report's "read more" line."""
    return "; ".join(f"{item} ({ITEMS[item]})" if item in ITEMS else item for item in item_ids)
