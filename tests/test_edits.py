"""The literal fixes' rewrites (pure): a quoted line in, the code that replaces it out, in the
line's own names and framework; None when the line has a shape the rewrite does not know (the
report then gives the fix sentence alone). tests/test_fixes.py grades the rewritten fixtures."""

from __future__ import annotations

import pytest

from reference import edits

NUMPY = edits.Context(False, "scaled", "numpy", {"mask": "mask", "W_o": "W_o"})
TORCH = edits.Context(False, "causal_mask", "torch", {})
ROWSUM = edits.Context(False, "rowsum", "numpy", {"output": "y"})


def FLASH(stage: str) -> edits.Context:  # noqa: N802 (read as a constant's name)
    """The tiled backward's context at ``stage``, in SPEC's names."""
    return edits.Context(False, stage, "numpy", {"Q": "Q"})


#: the running quantities of a tiled forward, as the loops fixtures name them
HELD = {"rescale": "alpha", "rescale_column": "alpha[..., None]", "running_max": "m_i",
        "running_max_column": "m_i[..., None]", "running_sum": "l_i",
        "running_sum_column": "l_i[..., None]"}


def RUNNING(stage: str, dialect: str = "numpy") -> edits.Context:  # noqa: N802
    """The tiled forward's context at ``stage``, with the running quantities' names."""
    return edits.Context(False, stage, dialect, {"Q": "Q"}, HELD)


def MHA(stage: str) -> edits.Context:  # noqa: N802 (read as a constant's name)
    """The multi-head backward's context at ``stage``, in SPEC's names."""
    return edits.Context(False, stage, "numpy", {w: w for w in ("W_q", "W_k", "W_v", "W_o")})


CASES = [
    (edits.divide_by_sqrt, NUMPY, "s = q @ k.T / d_k  # scale", "s = q @ k.T / d_k ** 0.5  # scale"),
    (edits.add_scale, NUMPY, "scores = Q @ K.T", "scores = (Q @ K.T) / Q.shape[-1] ** 0.5"),
    (edits.swap_branches, NUMPY, "s = np.where(mask, -np.inf, s)", "s = np.where(mask, s, -np.inf)"),
    (edits.swap_branches, TORCH, "s = s.masked_fill(keep, -1e9)", "s = s.masked_fill(~keep, -1e9)"),
    (edits.fill_far_below, NUMPY, "s = np.where(blocked, 0.0, s)", "s = np.where(blocked, -1e9, s)"),
    (edits.diagonal_down, TORCH, "bias = torch.ones(T, T).tril(1)",
     "bias = torch.ones(T, T).tril(diagonal=0)"),
    (edits.complement_mask, NUMPY, "m = np.triu(np.ones((n, m)), k=1)",
     "m = np.tril(np.ones((n, m)), k=0)"),
    (edits.complement_mask, NUMPY, "m = ~np.tril(ones, k=m - n)", "m = np.tril(ones, k=m - n)"),
    # the GPT lecture's tril buffer, transposed
    (edits.untransposed_triangle, TORCH,
     "wei = wei.masked_fill(self.tril[:T, :T].T == 0, float('-inf'))",
     "wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf'))"),
    (edits.untransposed_triangle, TORCH, "keep = torch.tril(ones).transpose(-2, -1)",
     "keep = torch.tril(ones)"),
    (edits.values_unrotated, NUMPY, "q, k, v = f(q, t), f(k, t), f(v, t)", "q, k = f(q, t), f(k, t)"),
    (edits.new_array, NUMPY, "Q /= np.sqrt(d_k)", "Q = Q / np.sqrt(d_k)"),
    (edits.transpose_first_factor, NUMPY, "dV = P @ grad_output",
     "dV = P.swapaxes(-1, -2) @ grad_output"),
    (edits.transpose_first_factor, NUMPY, "dK = np.matmul(dS, Q)",
     "dK = np.matmul(dS.swapaxes(-1, -2), Q)"),
    (edits.weight_the_sum, ROWSUM, "dS = P * (dP - dP.sum(axis=-1, keepdims=True))",
     "dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))"),
    (edits.weight_the_sum, ROWSUM, "dS = P * dP - P * np.sum(dP, axis=-1, keepdims=True)",
     "dS = P * dP - P * np.sum(P * dP, axis=-1, keepdims=True)"),
    (edits.weight_the_sum, ROWSUM, "dot = np.sum(dy, axis=axis, keepdims=True)",
     "dot = np.sum(y * dy, axis=axis, keepdims=True)"),
    (edits.input_first, MHA("dW_o"), "dW_o = flat(grad_output).T @ flat(C)",
     "dW_o = flat(C).T @ flat(grad_output)"),
    (edits.input_first, MHA("dW_q"), 'dW_q = np.einsum("ni,nj->ji", rows(X_q), rows(dq))',
     'dW_q = np.einsum("ni,nj->ij", rows(X_q), rows(dq))'),
    (edits.transpose_weight, MHA("dX_kv"), "dX_kv = dK @ W_k + dV @ W_v",
     "dX_kv = dK @ W_k.T + dV @ W_v.T"),
    (edits.transpose_weight, MHA("dC"),
     'dc = np.einsum("...nj,ji->...ni", g, W_o).reshape(*lead, n, h, d_k)',
     'dc = np.einsum("...nj,ij->...ni", g, W_o).reshape(*lead, n, h, d_k)'),
    (edits.undo_heads_steps, MHA("dC_heads"), "dC = (g @ W_o.T).reshape(*lead, h, n, d_k)",
     "dC = (g @ W_o.T).reshape(*lead, n, h, d_k).swapaxes(-2, -3)"),
    (edits.undo_heads_steps, MHA("dK_merged"), "dK = (dS.swapaxes(-1, -2) @ Q).reshape(*b, m, d)",
     "dK = (dS.swapaxes(-1, -2) @ Q).swapaxes(-2, -3).reshape(*b, m, d)"),
    (edits.both_paths, MHA("dX_kv"), "dX_kv = dK @ W_k.T", "dX_kv = dK @ W_k.T + dV @ W_v.T"),
    (edits.both_paths, MHA("dX_kv"), 'dX_kv = np.einsum("...mj,ij->...mi", dv, W_v)',
     'dX_kv = np.einsum("...mj,ij->...mi", dv, W_v) + np.einsum("...mj,ij->...mi", dk, W_k)'),
    (edits.own_paths, MHA("dX_q"), "dX_q = dX_kv = dX_q + dX_k + dX_v",
     "dX_q, dX_kv = dX_q, dX_k + dX_v"),
    (edits.recompute_from_scaled, FLASH("P"), "p = np.exp(s - L[..., i0:i1, None])",
     "p = np.exp(s / Q.shape[-1] ** 0.5 - L[..., i0:i1, None])"),
    (edits.scale_the_contribution, FLASH("dK"), "dK[..., j0:j1, :] += np.swapaxes(dS, -1, -2) @ Qi",
     "dK[..., j0:j1, :] += np.swapaxes(dS, -1, -2) @ Qi / Q.shape[-1] ** 0.5"),
    (edits.scale_the_contribution, FLASH("dQ"), "dq += ds @ k + ds2 @ k2",
     "dq += (ds @ k + ds2 @ k2) / Q.shape[-1] ** 0.5"),
    (edits.full_jacobian_of_product, FLASH("dS"), "dS = P * dP",
     "dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))"),
    (edits.full_jacobian_of_product, FLASH("dS"), "ds = d_p * probs",
     "ds = probs * (d_p - (probs * d_p).sum(axis=-1, keepdims=True))"),
    (edits.full_jacobian_of_diagonal, FLASH("dS"), "dS = dP * P * (1 - P)",
     "dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))"),
    (edits.full_jacobian_of_diagonal, edits.Context(False, "dS", "torch", {}),
     "return dLdA * self.A * (1 - self.A)",
     "return self.A * (dLdA - (self.A * dLdA).sum(dim=-1, keepdim=True))"),
    (edits.scale_the_contribution, FLASH("dK"), "dK = np.swapaxes(dS, -1, -2) @ Q",
     "dK = np.swapaxes(dS, -1, -2) @ Q / Q.shape[-1] ** 0.5"),
    (edits.scale_the_contribution, FLASH("dQ"), 'dQ = np.einsum("...ij,...jd->...id", dS, K)',
     'dQ = np.einsum("...ij,...jd->...id", dS, K) / Q.shape[-1] ** 0.5'),
    # the tiled forward's running quantities, in the code's own names
    (edits.rescale_accumulator, RUNNING("accumulator"), "acc = acc + p @ V[..., j0:j1, :]",
     "acc = alpha[..., None] * acc + p @ V[..., j0:j1, :]"),
    (edits.rescale_accumulator, RUNNING("accumulator"), "out[..., i0:i1, :] += pv  # add",
     "out[..., i0:i1, :] = alpha[..., None] * out[..., i0:i1, :] + pv  # add"),
    (edits.rescale_sum, RUNNING("running_sum"), "l_i += p.sum(axis=-1)",
     "l_i = alpha * l_i + p.sum(axis=-1)"),
    (edits.rescale_sum, RUNNING("running_sum"), "row_sum[..., a:b] = row_sum[..., a:b] + p.sum(-1)",
     "row_sum[..., a:b] = alpha * row_sum[..., a:b] + p.sum(-1)"),
    (edits.invert_rescale, RUNNING("accumulator"),
     "acc = np.exp(m_new - m_i)[..., None] * acc + p @ v", "acc = np.exp(m_i - m_new)[..., None] * acc + p @ v"),
    (edits.invert_rescale, RUNNING("acc_factor"), "grow = torch.exp2(new - old)",
     "grow = torch.exp2(old - new)"),
    (edits.invert_rescale, RUNNING("acc_factor"), "grow = np.exp2((new_max - raw_max) * c)",
     "grow = np.exp2((raw_max - new_max) * c)"),
    (edits.invert_rescale, RUNNING("accumulator"), "o = np.diag(1.0 / alpha) @ o + p @ v",
     "o = np.diag(alpha) @ o + p @ v"),
    (edits.add_log_sum, RUNNING("lse"), "L[..., i0:i1] = m_i", "L[..., i0:i1] = m_i + np.log(l_i)"),
    (edits.add_log_sum, RUNNING("lse", "torch"), "L[:, i:i + r] = m_i",
     "L[:, i:i + r] = m_i + torch.log(l_i)"),
    (edits.add_running_max, RUNNING("lse"), "L = np.log(l_i)", "L = m_i + np.log(l_i)"),
    (edits.keep_scaled_max, RUNNING("lse"), "L[..., i0:i1] = m_i / scale + np.log(l_i)",
     "L[..., i0:i1] = m_i + np.log(l_i)"),
    (edits.keep_scaled_max, RUNNING("lse"), "L = m_i * np.sqrt(d) + np.log(l_i)",
     "L = m_i + np.log(l_i)"),
    (edits.divide_by_running_sum, RUNNING("output"), "O[..., i0:i1, :] = acc",
     "O[..., i0:i1, :] = acc / l_i[..., None]"),
    # D as the code holds it: a query tile's rows (kept as a column), or all rows, sliced
    (edits.subtract_d, edits.Context(False, "dS", "numpy", {}, {"D_column": "Di"}),
     "ds = p * dp", "ds = p * (dp - Di)"),
    (edits.subtract_d, edits.Context(False, "dS", "numpy", {}, {"D_column": "D[..., a:b, None]"}),
     "dlogits = dw * w  # the diagonal", "dlogits = w * (dw - D[..., a:b, None])  # the diagonal"),
    (edits.keep_summed_axis, NUMPY, "dS = P * (dP - (P * dP).sum(axis=-1))",
     "dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))"),
    (edits.keep_summed_axis, NUMPY, "dot = np.sum(dy * y, axis=axis)",
     "dot = np.sum(dy * y, axis=axis, keepdims=True)"),
    (edits.keep_summed_axis, TORCH, "r = (p * dp).sum(dim=-1)", "r = (p * dp).sum(dim=-1, keepdim=True)"),
    (edits.positive_angle, NUMPY, "rot = np.exp(-1j * ang)", "rot = np.exp(1j * ang)"),
    (edits.positive_angle, TORCH, "f = torch.polar(torch.ones_like(a), -a)",
     "f = torch.polar(torch.ones_like(a), a)"),
    # a loop whose i steps 0, 2, 4: the cos line's feature i + 1 is a pair index's double too
    (edits.pair_index, edits.Context(False, "output", "numpy", {"d_model": "d_model"}),
     "pe[p, i + 1] = math.cos(p / (10000 ** ((2 * (i + 1)) / d_model)))",
     "pe[p, i + 1] = math.cos(p / (10000 ** ((2 * ((i + 1) // 2)) / d_model)))"),
    (edits.last_two_axes, NUMPY, "s = np.dot(Q, K.T) / np.sqrt(Q.shape[1])",
     "s = np.matmul(Q, K.swapaxes(-1, -2)) / np.sqrt(Q.shape[-1])"),
    (edits.last_two_axes, NUMPY, "return e / e.sum(axis=1, keepdims=True)",
     "return e / e.sum(axis=-1, keepdims=True)"),
    # where whole arrays are put or taken, the axis is left as written
    (edits.last_two_axes, NUMPY, "out = np.concatenate(heads, axis=1) @ W_o.T",
     "out = np.concatenate(heads, axis=1) @ W_o.swapaxes(-1, -2)"),
]


def test_a_fix_sentence_speaks_the_framework_and_the_students_names() -> None:
    sentence = "Block: `np.where(mask, scores, -np.inf)`, then `e.sum(axis=-1, keepdims=True)`."
    assert edits.in_dialect(sentence, "numpy") == sentence
    assert edits.in_dialect(sentence, "torch", {"mask": "attn_mask"}) == (
        "Block: `torch.where(attn_mask, scores, float('-inf'))`, then "
        "`e.sum(dim=-1, keepdim=True)`.")
    assert "tf.reduce_sum(e, axis=-1, keepdims=True)" in edits.in_dialect(sentence, "tf")
    assert "jnp.where(mask, scores, -jnp.inf)" in edits.in_dialect(sentence, "jax")
    # the student's Q is SPEC's K and the other way round: renamed at once, not one by one
    assert edits.in_dialect("`Q @ K.T`", "numpy", {"Q": "K", "K": "Q"}) == "`K @ Q.T`"


@pytest.mark.parametrize(("rewrite", "context", "line", "fixed"), CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_a_rewrite_turns_the_line_into_the_fix(rewrite: edits.Rewrite, context: edits.Context,
                                               line: str, fixed: str) -> None:
    assert edits.rewrite((rewrite,), line, context) == fixed


@pytest.mark.parametrize("line", ["return softmax(Q @ K.T) @ V", "x = y", "s = np.where(m, a, b)"])
def test_a_line_of_another_shape_gets_no_literal_fix(line: str) -> None:
    rows = (edits.fill_far_below, edits.diagonal_up, edits.values_unrotated,
            edits.untransposed_triangle)
    assert edits.rewrite(rows, line, NUMPY) is None


#: lines of the multi-head backward that are right already (a correct line beside a wrong
#: one computes a value the mistake changed): no rewrite touches them
RIGHT_ALREADY = [
    (edits.transpose_weight, "dX_q", "dX_q = dQ @ W_q.T"),
    (edits.transpose_weight, "dX_q", 'dX_q = np.einsum("...nj,ij->...ni", dq, W_q)'),
    (edits.undo_heads_steps, "dC_heads",
     "dC = (g @ W_o.T).reshape(*lead, n, h, d_k).swapaxes(-2, -3)"),
    (edits.undo_heads_steps, "dQ_merged", "dQ = (dS @ K).swapaxes(-2, -3).reshape(*b, n, d)"),
    (edits.undo_heads_steps, "dQ_merged", "dQ = merge_heads(dS @ K / np.sqrt(d_k))"),
    (edits.both_paths, "dX_kv", "dX_kv = dK @ W_k.T + dV @ W_v.T"),
    (edits.own_paths, "dX_q", "dX_q = dQ @ W_q.T"),
]


@pytest.mark.parametrize("line", ["dS = P * Q", "dS = dP * dQ", "dS += P * dP",
                                  "dS = P * (dP - rows)", "dS = dP * P * (1 - Q)"])
def test_a_product_whose_roles_the_names_do_not_tell_is_left_alone(line: str) -> None:
    assert edits.rewrite((edits.full_jacobian_of_product, edits.full_jacobian_of_diagonal), line,
                         FLASH("dS")) is None


@pytest.mark.parametrize("line", ["dQ = dS @ K / np.sqrt(d_k)", "dK = dS.T @ Q * scale",
                                  "dQ = dQ + dS @ K", "dq += ds @ k * d ** -0.5"])
def test_a_gradient_scaled_already_or_accumulated_is_not_scaled_again(line: str) -> None:
    assert edits.rewrite((edits.scale_the_contribution,), line, FLASH("dQ")) is None


#: lines of a tiled forward a rewrite must leave alone: another shape, two factors, a line
#: that reads what the fix would add, a quantity held under a name the line does not use
RUNNING_LEFT_ALONE = [
    (edits.rescale_accumulator, "accumulator", "acc = alpha[..., None] * acc + p @ v"),
    (edits.rescale_accumulator, "running_sum", "acc = acc + p @ v"),
    (edits.rescale_sum, "running_sum", "l_i = p.sum(axis=-1)"),
    (edits.invert_rescale, "accumulator", "acc = np.exp(a - b) * acc + np.exp(s - m) @ v"),
    (edits.invert_rescale, "accumulator", "acc = beta * acc + p @ v"),
    (edits.add_log_sum, "lse", "L = m_new"),
    (edits.add_log_sum, "lse", "L = m_i + np.log(l_i)"),
    (edits.add_running_max, "lse", "L = m_i + np.log(l_i)"),
    (edits.add_running_max, "lse", "L = np.log(total)"),
    (edits.divide_by_running_sum, "output", "O = acc / l_i[..., None]"),
    (edits.keep_scaled_max, "lse", "L = m_i + np.log(l_i)"),
    (edits.keep_scaled_max, "lse", "L = raw_max / scale + np.log(l_i)"),
]


@pytest.mark.parametrize(("rewrite", "stage", "line"), RUNNING_LEFT_ALONE,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(RUNNING_LEFT_ALONE)])
def test_a_running_update_of_another_shape_is_left_alone(rewrite: edits.Rewrite, stage: str,
                                                         line: str) -> None:
    assert edits.rewrite((rewrite,), line, RUNNING(stage)) is None


def test_no_running_fix_without_the_codes_names() -> None:
    bare = edits.Context(False, "accumulator", "numpy", {"Q": "Q"})
    assert edits.rewrite((edits.rescale_accumulator,), "acc = acc + p @ v", bare) is None
    held_d = edits.Context(False, "dS", "numpy", {}, {"D_column": "Di"})
    # no D held, or a product whose names do not tell the gradient from the weights
    assert edits.rewrite((edits.subtract_d,), "dS = P * dP", FLASH("dS")) is None
    assert edits.rewrite((edits.subtract_d,), "dS = P * Q", held_d) is None


@pytest.mark.parametrize(("rewrite", "stage", "line"), RIGHT_ALREADY,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(RIGHT_ALREADY)])
def test_a_right_line_of_the_backward_is_left_as_it_is(rewrite: edits.Rewrite, stage: str,
                                                       line: str) -> None:
    assert edits.rewrite((rewrite,), line, MHA(stage)) is None


def test_a_part_of_a_fix_is_never_offered_alone() -> None:
    """The per-row sum of a global softmax needs its max line changed too (``also``)."""
    line = "return e / np.sum(e)"
    context = edits.Context(True, "output", "numpy", {"axis": "axis"})
    assert edits.rewrite((edits.row_totals,), line, context) is None
    assert edits.rewrite((edits.row_totals,), line, context, alone=False) == (
        "return e / np.sum(e, axis=axis, keepdims=True)")
