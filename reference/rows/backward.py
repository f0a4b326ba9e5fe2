"""The catalogue rows of the backward pass (SPEC section 2, "IDs of the backward pass"), and
the forward rows that carry over to the backward assignments.

A forward ID in a backward assignment is the exact gradient of the forward that carries it: the
backward pipelines recompute the forward with the forward's choices, so the forward rows' own
variants mean the same there. ``carried`` adds the backward tasks to them (SPEC's list: every
attention variant in ``attention_backward``, every multi-head one in
``multi_head_attention_backward``), and the two mask rows that are families of two there get
their second member (the mask left out of the backward).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from types import MappingProxyType

from reference import edits
from reference.misconception import Misconception, Variant, Wording, variants_of

ATTN_BACK = ("attention_backward",)
MHA_BACK = ("multi_head_attention_backward",)
SOFTMAX_BACK = ("softmax_backward",)
ATTENTIVE_BACK = (*ATTN_BACK, *MHA_BACK)
BACKWARD = (*SOFTMAX_BACK, *ATTENTIVE_BACK)

#: forward task -> the backward task its variants carry over to
CARRIED_TO: dict[str, str] = {
    "attention": "attention_backward",
    "multi_head_attention": "multi_head_attention_backward",
}

#: the second member of the forward families of two (SPEC): the forward's mask left out of
#: the backward, the weights pushed through the textbook formulas as they are
FAMILIES: dict[str, tuple[Variant, ...]] = {
    "mask-zero-fill": variants_of("mask", "zero_fill_textbook", only=ATTENTIVE_BACK),
    "mask-after-softmax": variants_of("mask", "after_softmax_textbook", only=ATTENTIVE_BACK),
}


def carried(rows: Iterable[Misconception]) -> tuple[Misconception, ...]:
    """The forward rows with their variants extended to the backward tasks, where their
    one-line fixes are not given (the forward's line fixed alone leaves its backward wrong)."""
    out = []
    for row in rows:
        variants = tuple(
            dataclasses.replace(v, tasks=(*v.tasks, *(CARRIED_TO[t] for t in v.tasks
                                                      if t in CARRIED_TO)))
            for v in row.variants) + FAMILIES.get(row.id, ())
        backward = tuple(dict.fromkeys(CARRIED_TO[t] for v in row.variants for t in v.tasks
                                       if t in CARRIED_TO))
        out.append(dataclasses.replace(row, variants=variants,
                                       sentence_only_in=(*row.sentence_only_in, *backward)))
    return tuple(out)


_SUM_WORDS = ("(in attention_backward: dS = P * (dP - rowsum(P * dP)), the row sum over the "
              "keys)")

ROWS: tuple[Misconception, ...] = (
    Misconception(
        "softmax-backward-diagonal-only",
        "You keep only the diagonal of the softmax Jacobian",
        "Every output of a softmax depends on every input of its slice, because the outputs must "
        "sum to 1: raising one score lowers all the other weights. The Jacobian is "
        "diag(y) - y y^T, and its vector product is y * (dy - sum(y * dy)). Returning y * dy "
        "keeps only the diagonal and drops the weighted sum that the other entries contribute.",
        ("A-why-3", "B-2"),
        variants_of("dsoftmax", "diagonal", only=BACKWARD),
        "your gradient equals Y * dY, the diagonal part only; the weighted row sum "
        "sum(Y * dY) is never subtracted",
        fix="Subtract the weighted row sum: `dx = y * (dy - (y * dy).sum(axis=axis, "
            "keepdims=True))`.",
        stages=("dS",),
        rewrites=(edits.full_jacobian_of_product,),
    ),
    Misconception(
        "softmax-backward-elementwise",
        "You differentiate softmax as if it were elementwise, with y(1 - y)",
        "y(1 - y) is the derivative of a sigmoid, whose outputs are independent. A softmax's "
        "outputs are tied by their sum, so each one also depends on the other inputs of its "
        "slice: dy_i/dx_j = y_i (delta_ij - y_j). The y(1 - y) form keeps the diagonal and loses "
        "every cross term -y_i y_j.",
        ("A-why-3", "B-18"),
        variants_of("dsoftmax", "elementwise", only=BACKWARD),
        "your gradient equals dY * Y * (1 - Y), the derivative of an elementwise sigmoid; the "
        "cross terms -Y_i Y_j of the softmax Jacobian are missing",
        fix="Use the softmax's vector-Jacobian product: `dx = y * (dy - (y * dy).sum(axis=axis, "
            "keepdims=True))`.",
        stages=("dS",),
        rewrites=(edits.full_jacobian_of_diagonal,),
    ),
    Misconception(
        "softmax-backward-unweighted-sum",
        "You subtract the plain row sum of dY instead of the Y-weighted one",
        "The term subtracted in the softmax gradient is sum_j y_j dy_j: each upstream gradient "
        "weighted by the probability that produced it (the row of y y^T dy). Summing dy alone "
        "forgets the weights " + _SUM_WORDS + ".",
        ("A-tf-2", "B-2"),
        variants_of("rowsum_weight", "plain", only=BACKWARD),
        "your gradient equals Y * (dY - sum(dY)); the sum subtracted must be sum(Y * dY)",
        fix="Weight the sum by the probabilities: `(y * dy).sum(axis=axis, keepdims=True)`, "
            "not `dy.sum(...)`.",
        stages=("rowsum", "dS"),
        rewrites=(edits.weight_the_sum,),
    ),
    Misconception(
        "softmax-backward-wrong-axis",
        "Your softmax gradient sums along the wrong axis",
        "The row sum in y * (dy - sum(y * dy)) runs along the axis the softmax normalised, so "
        "that each slice's gradient uses only its own slice. Along any other axis the sum mixes "
        "different distributions. In attention the softmax runs over the keys (the last axis of "
        "the (..., n, m) scores); a sum over the queries is the wrong one.",
        ("A-err-1", "B-2", "B-13"),
        variants_of("rowsum_axis", "other", only=ATTENTIVE_BACK)
        + variants_of("rowsum_axis", "last", "first", "before", "moved_not_back",
                      only=SOFTMAX_BACK),
        "your row sum runs over the n = {n} queries; it must run over the m = {m} keys, "
        "the softmax's axis",
        fix="Take the sum along the softmax's axis with `keepdims=True`: "
            "`(P * dP).sum(axis=-1, keepdims=True)`.",
        stages=("rowsum", "dS"),
        rewrites=(edits.right_axis,),
        in_conventions=MappingProxyType({
            "task:softmax_backward": Wording(
                "Your softmax gradient sums along an axis other than `axis`",
                "The row sum in y * (dy - sum(y * dy)) runs along the axis the softmax "
                "normalised, so that each slice's gradient uses only its own slice: a fixed "
                "axis (the last, or the first) ignores the `axis` argument, and moving `axis` to "
                "the end to process rows is right only if the result is moved back "
                "(`np.moveaxis`), not reshaped to the input's shape.",
                "Sum along the given axis, `(y * dy).sum(axis=axis, keepdims=True)`, or move "
                "the axis back with `np.moveaxis(result, -1, axis)`.",
                "your gradient is not the product of the Jacobians of the slices along "
                "axis={axis}: its row sums run along another axis"),
        }),
    ),
    Misconception(
        "row-sum-misbroadcast",
        "Your row sum loses its axis (no keepdims), so NumPy subtracts it along the wrong one",
        "A sum over the last axis without `keepdims=True` has shape (..., n), and NumPy aligns "
        "it with the last axis of (..., n, m): sum i is subtracted from column i, not from row "
        "i. It only runs where the shapes happen to match (square scores), and fails elsewhere.",
        ("B-2",),
        variants_of("rowsum_axis", "no_keepdims", only=(*SOFTMAX_BACK, *ATTN_BACK))
        # in multi-head attention the scores have a head axis: the code that runs on square
        # scores is written per head, (n, m) at a time
        + variants_of("rowsum_axis", "no_keepdims_per_slice", only=MHA_BACK),
        "your row sums are subtracted along the columns (sum i from column i); with "
        "`keepdims=True` each is subtracted from its own row",
        fix="Keep the summed axis: `(P * dP).sum(axis=-1, keepdims=True)`.",
        rewrites=(edits.keep_summed_axis,),
        in_conventions=MappingProxyType({
            "task:softmax_backward": Wording(
                "Your row sum loses its axis (no keepdims), so NumPy subtracts it along the "
                "wrong one",
                "A sum along `axis` without `keepdims=True` drops that axis, and NumPy aligns "
                "what is left with the last axes of y: the sum of slice i is subtracted along "
                "the wrong direction. It only runs where the shapes happen to match (square "
                "slices), and fails elsewhere. (Along the first axis the shapes line up as if "
                "kept, which is why that case is right.)",
                "Keep the summed axis: `(y * dy).sum(axis=axis, keepdims=True)`."),
        }),
        stages=("rowsum", "dS"),
    ),
    Misconception(
        "dv-not-transposed",
        "You compute dV = P dO instead of P^T dO",
        "In O = P V each value row j is used by every query i with weight P[i, j], so its "
        "gradient gathers the upstream rows along the column of P: dV = P^T dO, of shape "
        "(m, d_v). P dO indexes the queries as if they were keys; it only runs when n = m, and "
        "fails when n != m.",
        ("B-6", "B-12", "B-21"),
        variants_of("dv_product", "plain", only=ATTENTIVE_BACK),
        "your dV equals P dO (it only runs with n = m = {n}); it must be P^T dO",
        fix="Transpose the weights: `dV = np.swapaxes(P, -1, -2) @ dO`.",
        stages=("dV",),
        rewrites=(edits.transpose_first_factor,),
    ),
    Misconception(
        "dk-not-transposed",
        "You compute dK = dS Q instead of dS^T Q",
        "S = Q K^T pairs query i with key j in S[i, j]; key j's gradient gathers over the "
        "queries, down column j: dK = dS^T Q / sqrt(d_k), of shape (m, d_k). dS Q only runs "
        "when n = m, and fails when n != m.",
        ("A-err-2", "B-12", "B-14"),
        variants_of("dk_product", "plain", only=ATTENTIVE_BACK),
        "your dK equals dS Q (it only runs with n = m = {n}); it must be dS^T Q",
        fix="Transpose dS: `dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(d_k)`.",
        stages=("dK",),
        rewrites=(edits.transpose_first_factor,),
    ),
    Misconception(
        "backward-missing-scale",
        "Your dQ and dK lack the 1/sqrt(d_k) of the forward",
        "The forward multiplies Q K^T by the constant 1/sqrt(d_k), so the chain rule brings the "
        "same constant back on the way down: dQ = dS K / sqrt(d_k) and dK = dS^T Q / sqrt(d_k). "
        "The scale is not learned and does not disappear in the backward.",
        ("B-4",),
        variants_of("backward_scale", "none", only=ATTENTIVE_BACK),
        "your dQ and dK are sqrt(d_k) = {sqrt_dk} times too large: the factor 1/sqrt(d_k) of "
        "the forward is missing from them",
        fix="Multiply dS by the forward's scale before dQ and dK: `dS = dS / np.sqrt(d_k)`.",
        stages=("dQ", "dK"),
        rewrites=(edits.scale_the_contribution,),
        also=("dQ", "dK"),
    ),
    Misconception(
        "backward-scale-by-dk",
        "Your dQ and dK are divided by d_k instead of sqrt(d_k)",
        "The forward divides the scores by sqrt(d_k), so the chain rule divides dQ and dK by the "
        "same sqrt(d_k). Dividing by d_k makes them sqrt(d_k) times too small, although the "
        "forward (and dV) is right.",
        ("A-err-6", "B-11"),
        variants_of("backward_scale", "dk", only=ATTENTIVE_BACK),
        "your dQ and dK are divided by d_k = {d_k}; the forward's factor is 1/sqrt(d_k) = "
        "{inv_sqrt_dk}",
        fix="Divide by `np.sqrt(d_k)`, the forward's scale, not by `d_k`.",
        stages=("dS_scaled", "dQ", "dK"),
        rewrites=(edits.divide_by_sqrt,),
    ),
    Misconception(
        "softmax-backward-output-as-logits",
        "You apply softmax to the given output again, as if it were the logits",
        "softmax_backward receives Y = softmax(x), the probabilities themselves, not x. The "
        "Jacobian diag(y) - y y^T is built from those probabilities directly; applying softmax "
        "to them again gives another, flatter distribution and the wrong Jacobian.",
        ("A-tf-2",),
        variants_of("softmax_input", "logits", only=SOFTMAX_BACK),
        "your gradient is built from softmax(Y) instead of Y, the probabilities given",
        fix="Use `output` as the probabilities: `y = output`, with no second softmax.",
        stages=("probabilities",),
    ),
    Misconception(
        "weight-grad-transposed",
        "Your weight gradients come back transposed",
        "A projection Y = X W with X of shape (..., n, d_in) and W of shape (d_in, d_out) has "
        "dW = X^T dY: each entry W[i, j] links input feature i to output feature j, so its "
        "gradient pairs column i of X with column j of dY, summed over every position (and "
        "every leading index: the weight is shared). dY^T X is that matrix transposed. The "
        "shapes agree only because d_model x d_model weights are square.",
        ("B-8",),
        variants_of("weight_grad", "transposed", "transposed_qkv", "transposed_o", only=MHA_BACK),
        "your {which_weights} equal dY^T X, the transpose of X^T dY",
        fix="Put the input first: `dW = X.reshape(-1, d_in).T @ dY.reshape(-1, d_out)`, not "
            "`dY.T @ X`.",
        stages=("dW_o", "dW_q", "dW_k", "dW_v"),
        rewrites=(edits.input_first,),
        also=("dW_o", "dW_q", "dW_k", "dW_v"),
    ),
    Misconception(
        "dx-weight-not-transposed",
        "Your input gradients go through the weights untransposed: dX = dY W",
        "Y = X W sends input feature i to output feature j through W[i, j], so the gradient "
        "flows back along the same entries the other way: dX = dY W^T. dY W uses W as if it "
        "mapped outputs to inputs; with square d_model x d_model weights it runs, and gives the "
        "wrong numbers. Through W_o this makes dC wrong, and every gradient after it.",
        ("B-8",),
        variants_of("dx_weight", "plain", "plain_qkv", "plain_o", only=MHA_BACK),
        "your gradient through {which_weights_dx} equals dY W; it must be dY W^T",
        fix="Transpose the weight: `dX = dY @ W.T`.",
        stages=("dC", "dC_heads", "dX_q", "dX_kv"),
        rewrites=(edits.transpose_weight,),
        also=("dC", "dC_heads", "dX_q", "dX_kv"),
    ),
    Misconception(
        "backward-heads-not-transposed",
        "Your backward splits or merges the heads by a plain reshape",
        "The forward splits heads with a reshape to (..., n, h, d_k) and a transpose to "
        "(..., h, n, d_k), and merges them with the transpose back. The backward must undo each "
        "step in the same way: dC (..., n, d_model) is split like Q was, and the heads' dQ, dK, "
        "dV are merged like the heads' outputs were. A plain reshape between (..., n, d_model) "
        "and (..., h, n, d_k) mixes tokens and heads.",
        ("A-tf-9",),
        variants_of("backward_heads", "reshape_split", "reshape_merge", "reshape_both",
                    only=MHA_BACK),
        "your {heads_step} by a plain reshape: the heads get other tokens' gradients",
        fix="Undo the forward's steps: split with `dC.reshape(..., n, h, d_k).swapaxes(-2, "
            "-3)` and merge with `.swapaxes(-2, -3).reshape(..., n, d_model)`.",
        stages=("dC_heads", "dQ_merged", "dK_merged", "dV_merged"),
        rewrites=(edits.undo_heads_steps,),
        also=("dC_heads", "dQ_merged", "dK_merged", "dV_merged"),
    ),
    Misconception(
        "dxkv-missing-path",
        "Your dX_kv takes only one of its two paths",
        "X_kv feeds both the keys (K = X_kv W_k) and the values (V = X_kv W_v), so its gradient "
        "is the sum of both paths: dX_kv = dK W_k^T + dV W_v^T. Keeping one of them drops the "
        "other's contribution.",
        ("A-tf-7", "B-22"),
        variants_of("dxkv_path", "k_only", "v_only", only=MHA_BACK),
        "your dX_kv has {kept_path} only; the {missing_path} is missing",
        fix="Add both paths: `dX_kv = dK @ W_k.T + dV @ W_v.T`.",
        stages=("dX_kv",),
        rewrites=(edits.both_paths,),
    ),
    Misconception(
        "dx-paths-merged",
        "You return the self-attention total as both dX_q and dX_kv",
        "X_q and X_kv are separate arguments, even when the caller passes the same array: dX_q "
        "is the gradient through the queries alone (dQ W_q^T), dX_kv through the keys and "
        "values (dK W_k^T + dV W_v^T). Their sum is the gradient of a self-attention input, "
        "which the caller adds; returning it twice counts every path in both. It only runs "
        "when X_q and X_kv have one shape, and fails when n != m.",
        ("A-tf-7", "B-22"),
        variants_of("dx_paths", "merged", only=MHA_BACK),
        "your dX_q and dX_kv are both dQ W_q^T + dK W_k^T + dV W_v^T (it only runs with "
        "n = m = {n})",
        fix="Return each input's own gradient: `dX_q = dQ @ W_q.T` and `dX_kv = dK @ W_k.T + "
            "dV @ W_v.T`.",
        stages=("dX_q",),
        rewrites=(edits.own_paths,),
    ),
)
