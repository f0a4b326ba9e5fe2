"""The ``flash_attention_forward`` task (SPEC section 1, "Tiled attention"): the plain
reference (one softmax, no tiles), a tiled NumPy reference (the FlashAttention-2 forward) that
agrees with it, and the pipeline of the online softmax's choices.

The pipeline models the state a tiled forward keeps per query row: the running max m, the
running sum l and the unnormalised accumulator acc, updated once per key tile, and the scheme
that combines the tiles (``flash_scheme``: the online softmax, a softmax per tile, or none at
all). Its loop runs over the key tiles with every query row at once; what depends on the query
tiles (the remainder tile, a tile-local causal mask, skipped future tiles) is worked out per row,
so the pipeline computes what a loop over (query tile, key tile) pairs would.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reference.stages import (
    SCALE,
    Array,
    Dims,
    Recipe,
    Stages,
    TileBlocks,
    choice,
    knobs,
    swap,
    tile_states,
)
from reference.tasks.causal_mask import causal_keep, causal_mask

CORRECT = knobs(
    # how the key tiles are combined: "online" (FlashAttention), "per_tile" (each tile's own
    # softmax, the tiles' outputs added), "none" (exp(S) summed without any max)
    flash_scheme="online",
    # the factor the output accumulator is multiplied by when the running max grows:
    # exp(m_old - m_new) ("rescaled"), nothing ("kept"), exp(m_new - m_old) ("inverted")
    flash_acc_rescale="rescaled",
    # the same for the running sum l: "rescaled" or "kept"
    flash_sum_rescale="rescaled",
    # O = acc / l ("divided") or acc ("undivided")
    flash_final="divided",
    # L: m + log l ("max_plus_log_sum"), m ("max_only"), log l ("log_sum_only"), the
    # logsumexp of the unscaled scores ("unscaled_scores"), or the running max of the raw
    # scores plus log l ("raw_max")
    flash_lse="max_plus_log_sum",
    # the running max starts at -inf ("neg_inf") or at a finite sentinel ("finite")
    flash_initial_max="neg_inf",
    # the tiles counted by ceil ("kept") or by floor division: the last partial tile of the
    # keys, of the queries, or of both dropped
    flash_remainder="kept",
    # a causal mask of absolute positions ("absolute"), or of tile-local row and column
    # numbers, on every tile ("tile_local") or on the tiles not wholly in the future
    # ("tile_local_skip")
    flash_mask_tiles="absolute",
    # the causal argument honoured ("applied") or ignored ("missing"), as in causal
    # self-attention
    causal="applied",
)

#: the finite "-inf" a running max may wrongly start at (any of 0, -1e4, -1e6 fails alike
#: on the probes: only rows whose every logit lies far below it underflow)
FINITE_SENTINEL = 0.0
#: a row whose visible scaled logits all lie below this underflows from a finite sentinel
FAR_BELOW = -1.0e5


def _floats(*arrays: ArrayLike) -> list[NDArray[np.float64]]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def flash_attention_forward(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, causal: bool = False, block_q: int = 16,
    block_k: int = 16,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(O, L) by one softmax over all keys (the block sizes change nothing): O = softmax(S) V
    with S = Q K^T / sqrt(d), causal with the bottom-right mask; L the logsumexp of the
    visible scaled scores, (..., n)."""
    q, k, v = _floats(Q, K, V)
    n, m = q.shape[-2], k.shape[-2]
    scores = q @ swap(k) / np.sqrt(q.shape[-1])
    if causal:
        scores = np.where(causal_mask(n, m), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    return (e / total) @ v, (top + np.log(total))[..., 0]


def flash_attention_tiled(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, causal: bool = False, block_q: int = 16,
    block_k: int = 16,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(O, L) as FlashAttention-2 computes them: per query tile, a loop over the key tiles
    with a running max, a running sum and an accumulator rescaled when the max grows. Never
    holds more than one (block_q, block_k) tile of scores."""
    q, k, v = _floats(Q, K, V)
    n, m, d = q.shape[-2], k.shape[-2], q.shape[-1]
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.empty((*lead, n, v.shape[-1]))
    lse = np.empty((*lead, n))
    scale = 1 / np.sqrt(d)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        qi = q[..., i0:i1, :] * scale
        row_max = np.full((*lead, i1 - i0), -np.inf)
        row_sum = np.zeros((*lead, i1 - i0))
        acc = np.zeros((*lead, i1 - i0, v.shape[-1]))
        for j0 in range(0, m, block_k):
            j1 = min(j0 + block_k, m)
            if causal and j0 > i1 - 1 + m - n:
                break  # this key tile, and every later one, is in every row's future
            s = qi @ swap(k[..., j0:j1, :])
            if causal:
                s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None] + m - n,
                             s, -np.inf)
            new_max = np.maximum(row_max, s.max(axis=-1))
            alpha = np.exp(row_max - new_max)
            p = np.exp(s - new_max[..., None])
            row_sum = alpha * row_sum + p.sum(axis=-1)
            acc = alpha[..., None] * acc + p @ v[..., j0:j1, :]
            row_max = new_max
        out[..., i0:i1, :] = acc / row_sum[..., None]
        lse[..., i0:i1] = row_max + np.log(row_sum)
    return out, lse


def reference(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, causal: bool = False, block_q: int = 16,
    block_k: int = 16,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The task's outputs: (O, L)."""
    return flash_attention_forward(Q, K, V, causal, block_q, block_k)


def keep_mask(recipe: Recipe, causal: bool, n: int, m: int, block_q: int, block_k: int
              ) -> Array:
    """The (n, m) keys each query row takes into account under the recipe's causal mask
    (everything when not causal, or with the mask missing)."""
    if not causal or choice(recipe, "causal") == "missing":
        return np.ones((n, m), dtype=bool)
    how = choice(recipe, "flash_mask_tiles")
    if how == "absolute":
        return causal_keep(recipe, n, m)
    offset = m - n if choice(recipe, "mask_align") == "bottom_right" else 0
    rows, cols = np.arange(n)[:, None], np.arange(m)[None, :]
    keep = cols % block_k <= rows % block_q + offset
    if how == "tile_local_skip":
        last_row = np.minimum((rows // block_q + 1) * block_q, n) - 1
        keep &= (cols // block_k) * block_k <= last_row + offset
    return keep


def _limits(recipe: Recipe, n: int, m: int, block_q: int, block_k: int) -> tuple[int, int]:
    """How many query rows and keys the recipe's tiles cover."""
    dropped = choice(recipe, "flash_remainder")
    rows = (n // block_q) * block_q if dropped in ("queries", "both") else n
    keys = (m // block_k) * block_k if dropped in ("keys", "both") else m
    return rows, keys


def pipeline(
    recipe: Recipe, Q: Array, K: Array, V: Array, causal: bool = False, block_q: int = 16,
    block_k: int = 16, record: Stages | None = None,
) -> tuple[Array, Array]:
    """The ``flash_attention_forward`` task under ``recipe``: (O, L). Rows the recipe never
    computes (a dropped query tile) are NaN."""
    q, k, v = _floats(Q, K, V)
    n, m, d = q.shape[-2], k.shape[-2], q.shape[-1]
    dims = Dims(n=n, m=m, d_k=d, d_v=v.shape[-1], k_shape0=k.shape[0], k_shape1=k.shape[1])
    factor = SCALE[choice(recipe, "scale")](dims)
    with np.errstate(all="ignore"):
        raw = q @ swap(k)
        scaled = raw * factor
        keep = keep_mask(recipe, bool(causal), n, m, block_q, block_k)
        rows, keys = _limits(recipe, n, m, block_q, block_k)
        keep = keep & (np.arange(m) < keys)[None, :]
        visible = np.where(keep, scaled, -np.inf)
        scheme = choice(recipe, "flash_scheme")
        lead = visible.shape[:-2]
        if scheme == "per_tile":
            out, lse = _per_tile(visible, v, keys, block_k)
        else:
            out, lse = _running(recipe, scheme, visible, v, keys, block_k, factor, record)
        if choice(recipe, "flash_lse") == "unscaled_scores":
            raw_visible = np.where(keep, raw, -np.inf)
            top = raw_visible.max(axis=-1)
            lse = top + np.log(np.exp(raw_visible - top[..., None]).sum(axis=-1))
        out = np.broadcast_to(out, (*lead, n, v.shape[-1])).copy()
        lse = np.broadcast_to(lse, (*lead, n)).copy()
        out[..., rows:, :] = np.nan
        lse[..., rows:] = np.nan
    if record is not None:
        # (the scaled scores each tile sees, after its causal mask: the mask's line)
        record["masked_tile"] = np.asarray(visible).view(TileBlocks)
        record["output"] = out
        record["lse"] = lse
    return out, lse


def _tiles(keys: int, block_k: int) -> list[tuple[int, int]]:
    return [(j0, min(j0 + block_k, keys)) for j0 in range(0, keys, block_k)]


def _per_tile(visible: Array, v: Array, keys: int, block_k: int) -> tuple[Array, Array]:
    """Each key tile's own softmax, the tiles' outputs added; L as a running logaddexp of the
    tiles' logsumexps (which is right)."""
    out = np.zeros((*visible.shape[:-1], v.shape[-1]))
    lse = np.full(visible.shape[:-1], -np.inf)
    for j0, j1 in _tiles(keys, block_k):
        s = visible[..., j0:j1]
        top = s.max(axis=-1, keepdims=True)
        e = np.exp(s - top)
        total = e.sum(axis=-1, keepdims=True)
        out = out + (e / total) @ v[..., j0:j1, :]
        lse = np.logaddexp(lse, (top + np.log(total))[..., 0])
    return out, lse


#: the online softmax's running state, recorded after each key tile: the factor exp(m_old -
#: m_new) the running max gives, the running max m, the running sum l, the accumulator acc,
#: and the factor the accumulator is multiplied by (from the second key tile on)
TILE_STAGES = ("rescale", "running_max", "running_sum", "accumulator", "acc_factor")


def _running(recipe: Recipe, scheme: str, visible: Array, v: Array, keys: int, block_k: int,
             factor: float, record: Stages | None = None) -> tuple[Array, Array]:
    """The online softmax's state through the key tiles (or, with no scheme, exp(S) summed
    without a max), then O and L from it. The online state after each key tile is recorded
    (``TILE_STAGES``)."""
    shape = visible.shape[:-1]
    online = scheme == "online"
    start = FINITE_SENTINEL if choice(recipe, "flash_initial_max") == "finite" else -np.inf
    row_max = np.full(shape, start if online else 0.0)
    row_sum = np.zeros(shape)
    acc = np.zeros((*shape, v.shape[-1]))
    acc_how, sum_how = choice(recipe, "flash_acc_rescale"), choice(recipe, "flash_sum_rescale")
    held: dict[str, list[Array]] = {stage: [] for stage in TILE_STAGES}
    for index, (j0, j1) in enumerate(_tiles(keys, block_k)):
        s = visible[..., j0:j1]
        new_max = np.maximum(row_max, s.max(axis=-1)) if online else row_max
        p = np.where(s == -np.inf, 0.0, np.exp(s - new_max[..., None]))
        alpha = np.where(row_max == new_max, 1.0, np.exp(row_max - new_max))
        if index:  # (the first tile initialises the state: acc and l are still 0)
            acc_factor = {"rescaled": alpha, "kept": np.ones(shape),
                          "inverted": 1 / alpha}[acc_how]
            sum_factor = alpha if sum_how == "rescaled" else np.ones(shape)
            row_sum = sum_factor * row_sum
            acc = acc_factor[..., None] * acc
            held["acc_factor"].append(acc_factor)
        row_sum = row_sum + p.sum(axis=-1)
        acc = acc + p @ v[..., j0:j1, :]
        row_max = new_max
        for stage, value in (("rescale", alpha), ("running_max", row_max),
                             ("running_sum", row_sum), ("accumulator", acc)):
            held[stage].append(value)
    if record is not None and online:
        record.update({stage: tile_states(values, per_row=stage != "accumulator")
                       for stage, values in held.items() if values})
    out = acc / row_sum[..., None] if choice(recipe, "flash_final") == "divided" else acc
    lse_how = choice(recipe, "flash_lse")
    log_sum = np.log(row_sum)
    if not online:
        lse = log_sum
    elif lse_how == "max_only":
        lse = row_max
    elif lse_how == "log_sum_only":
        lse = log_sum
    elif lse_how == "raw_max":
        lse = row_max / factor + log_sum
    else:
        lse = row_max + log_sum
    return out, lse
