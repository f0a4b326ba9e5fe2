"""The rest of the attention unit as pipelines of stages with buggy alternatives (see
``reference.variants`` for recipes): the causal mask, the sinusoidal positional encoding, RoPE,
and causal self-attention, which reuses the multi-head pipeline with its own mask and RoPE."""

from __future__ import annotations

import numpy as np

from reference.variants import Array, Recipe, Stages, _choice, _multi_head

#: how far past its own position a query sees: blocks-self one less, sees-next one more
_DIAGONAL_SHIFT = {"self": 0, "blocks_self": -1, "sees_next": 1}


def causal_keep(recipe: Recipe, n: int, m: int) -> Array:
    """The (n, m) keep-mask the recipe builds (True: the query may attend to the key)."""
    offset = m - n if _choice(recipe, "mask_align") == "bottom_right" else 0
    shift = _DIAGONAL_SHIFT[_choice(recipe, "mask_diagonal")]
    position = np.arange(n)[:, None] + offset
    key = np.arange(m)[None, :]
    if _choice(recipe, "mask_direction") == "past":
        keep = key <= position + shift
    else:
        keep = key >= position - shift
    return ~keep if _choice(recipe, "mask_polarity") == "inverted" else keep


def causal_mask(recipe: Recipe, n: int, m: int | None = None,
                record: Stages | None = None) -> Array:
    """The ``causal_mask`` assignment under ``recipe``, as 1.0 (keep) and 0.0 (blocked)."""
    keep = causal_keep(recipe, n, n if m is None else m).astype(np.float64)
    if record is not None:
        record["output"] = keep
    return keep


def positional_encoding(recipe: Recipe, n_positions: int, d_model: int,
                        record: Stages | None = None) -> Array:
    """The ``positional_encoding`` assignment under ``recipe``."""
    feature = np.arange(d_model)
    if _choice(recipe, "pe_layout") == "interleaved":
        pair, is_sin = feature // 2, feature % 2 == 0
    else:  # [sin | cos]: the first half sines of pairs 0.., the second half their cosines
        half = (d_model + 1) // 2
        pair, is_sin = feature % half, feature < half
    if _choice(recipe, "pe_trig") == "swapped":
        is_sin = ~is_sin
    exponent = {"pair": 2 * pair, "feature_twice": 2 * feature, "feature": feature,
                "missing_two": pair}[_choice(recipe, "pe_exponent")] / d_model
    frequency = 10000.0 ** (exponent if _choice(recipe, "pe_frequency") == "multiply"
                            else -exponent)
    first = 1 if _choice(recipe, "pe_positions") == "from_one" else 0
    position = np.arange(first, first + n_positions, dtype=np.float64)[:, None]
    with np.errstate(all="ignore"):
        angle = position * frequency
        encoding = np.where(is_sin, np.sin(angle), np.cos(angle))
    if record is not None:  # per feature, and per pair (the sines' columns) as code keeps them
        record.update(positions=position[:, 0], pair_frequencies=frequency[is_sin],
                      frequencies=frequency, pair_angles=angle[:, is_sin], angles=angle,
                      output=encoding)
    return encoding


def halves_order(d: int) -> Array:
    """SPEC's features in the order of a (i, i + d/2) layout (see ``grader/sandbox/interface``):
    the pairs' first features, then their second ones."""
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def rope(recipe: Recipe, x: Array, positions: Array | None = None, theta: float = 10000.0,
         record: Stages | None = None) -> Array:
    """The ``rope`` assignment under ``recipe``."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape[-2], x.shape[-1]
    if _choice(recipe, "rope_pairs") == "interleaved_in_halves":
        # a course of (i, i + d/2) pairs is handed SPEC's features in that order: code that
        # rotates neighbours there pairs features of different SPEC pairs
        order = halves_order(d)
        inner = {**recipe, "rope_pairs": "interleaved"}
        turned = rope(inner, x[..., order], positions, theta, record)
        return turned[..., np.argsort(order)]
    if positions is None or _choice(recipe, "rope_positions") == "ignored":
        positions = np.arange(n)
    pair = np.arange(d // 2)
    exponent = (pair if _choice(recipe, "rope_frequency") == "missing_two" else 2 * pair) / d
    with np.errstate(all="ignore"):
        frequency = float(theta) ** -exponent
        angle = np.asarray(positions, dtype=np.float64)[:, None] * frequency
    cos, sin = np.cos(angle), np.sin(angle)
    if record is not None:
        record.update(positions=np.asarray(positions, dtype=np.float64), frequencies=frequency,
                      angles=angle)
    if _choice(recipe, "rope_sign") == "reversed":
        sin = -sin
    halves = _choice(recipe, "rope_pairs") == "halves"
    first, second = (x[..., : d // 2], x[..., d // 2:]) if halves else (x[..., 0::2], x[..., 1::2])
    partner = _choice(recipe, "rope_partner")
    if partner == "mixed":
        new_first, new_second = first * cos - second * sin, first * sin + second * cos
    elif partner == "none_signed":  # x*cos - x*sin and x*cos + x*sin: signs in the sin table
        new_first, new_second = first * cos - first * sin, second * cos + second * sin
    else:  # "none": x*cos + x*sin everywhere
        new_first, new_second = first * cos + first * sin, second * cos + second * sin
    out = np.empty_like(x)
    if halves:
        out[..., : d // 2], out[..., d // 2:] = new_first, new_second
    else:
        out[..., 0::2], out[..., 1::2] = new_first, new_second
    if record is not None:
        record["output"] = out
    return out


def causal_self_attention(
    recipe: Recipe, X: Array, W_q: Array, W_k: Array, W_v: Array, W_o: Array,
    num_heads: int, theta: float | None = None, record: Stages | None = None,
) -> Array:
    """The ``causal_self_attention`` assignment under ``recipe``: multi-head self-attention with
    the recipe's causal mask (or none) and, with ``theta``, its RoPE."""
    n = X.shape[-2]
    # no causal mask is a mask that keeps everything: the scores it "masks" are still a stage
    # of their own, the line after which the mask belongs
    mask = causal_keep(recipe, n, n) if _choice(recipe, "causal") == "applied" else \
        np.ones((n, n), dtype=bool)
    if record is not None:
        record["causal_mask"] = mask.astype(np.float64)
    rotate = None
    if theta is not None:
        where = _choice(recipe, "rope_at")

        def rotate(q: Array, k: Array, v: Array, stage: str) -> tuple[Array, Array, Array]:
            wanted = "projected" if where == "before_split" else "split"
            if stage not in (wanted, "unsplit"):
                return q, k, v
            turned = (q, k, v) if where == "heads_qkv" else (q, k)
            rotated = [rope(recipe, a, None, float(theta)) for a in turned]
            return rotated[0], rotated[1], rotated[2] if where == "heads_qkv" else v

    with np.errstate(all="ignore"):
        return _multi_head(recipe, X, X, (W_q, W_k, W_v, W_o), num_heads, mask,
                           {} if record is None else record, rotate)


def rows_without_keys(recipe: Recipe, n: int) -> Array | None:
    """The queries the recipe's own causal mask leaves without any key (the first with the
    diagonal blocked, the last with the mask inverted), or None: such a row computes whatever
    the code's fill value gives (NaN with -inf, a plain mean with -1e9), so it is judged from
    the other rows."""
    if _choice(recipe, "causal") != "applied":
        return None
    empty = np.logical_not(np.any(causal_keep(recipe, n, n), axis=-1))
    return np.asarray(empty) if empty.any() else None
