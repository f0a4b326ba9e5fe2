"""Stage 3 for the rest of the attention unit: the probes of ``causal_mask``,
``positional_encoding``, ``rope`` and ``causal_self_attention``, and their conceptual checks.

Shapes break the coincidences that hide these bugs: more keys than queries for the mask's
alignment (a KV cache), a first row that is empty if the diagonal is blocked, several d_model and
several theta, positions that start late or jump (packed sequences), one, two and four heads, and a
sequence length different from d_k, d_model and the number of heads. Sizes come from the seed, so a
hidden seed gives new shapes with the same structure.
"""

from __future__ import annotations

import numpy as np

from grader.core.concepts import ATOL, Concept, Outcomes, Verdict, _close, _out
from grader.core.probes import STABILITY_OFFSET, UNDERFLOW_OFFSETS, Maker, _probe, _weights
from grader.model import Array, Probe

# ----------------------------------------------------------------------------------- causal mask


def causal_mask_probes(make: Maker) -> list[Probe]:
    square = int(make.rng.integers(4, 7))
    n_cache = int(make.rng.integers(2, 4))
    m_cache = n_cache + int(make.rng.integers(2, 5))
    return [
        _probe("one-token", (1,), "unbatched", "square", bank=("A-edge-3",)),
        _probe("square", (square,), "unbatched", "square", bank=("A-edge-6",), traced=True,
               repeat=True),
        _probe("square-m-given", (square + 1, square + 1), "unbatched", "square",
               bank=("A-edge-6",)),
        _probe("kv-cache", (n_cache, m_cache), "unbatched", "kv-cache", bank=("A-edge-6",),
               traced=True),
        _probe("kv-cache-one-query", (1, m_cache + 1), "unbatched", "kv-cache",
               bank=("A-edge-6",)),
        _probe("kv-cache-long", (n_cache + 2, m_cache + 3), "unbatched", "kv-cache",
               bank=("A-edge-6",)),
    ]


def _kept(r: Outcomes, probe_id: str) -> Array:
    return _out(r, probe_id) > 0.5


def _sees_itself(r: Outcomes) -> Verdict:
    keep = _kept(r, "square")
    ok = keep.ndim == 2 and keep.shape[0] == keep.shape[1] and bool(np.diag(keep).all())
    return ok, ("every token may attend to itself (the diagonal is kept)." if ok else
                "a token must be able to attend to itself: the diagonal of a square causal mask "
                "is allowed (and the first token has nothing else to attend to).")


def _no_future(r: Outcomes) -> Verdict:
    keep = _kept(r, "square")
    ok = keep.ndim == 2 and not np.triu(keep, k=1).any()
    return ok, ("no query may attend to a key after its own position." if ok else
                "some query may attend to a later key: the part of the mask above the diagonal "
                "must be blocked.")


def _last_query_sees_all(r: Outcomes) -> Verdict:
    keep = _kept(r, "kv-cache")
    probe = r["kv-cache"][0]
    n, m = probe.args
    ok = keep.shape == (n, m) and bool(keep[-1].all()) and not keep[0, m - n + 1:].any()
    return ok, ("with cached keys, the last query sees every key and the first sees up to its "
                "own position m - n." if ok else
                f"with n = {n} queries after {m - n} cached keys, the last query should see all "
                f"m = {m} keys and query 0 the keys 0..{m - n}.")


CAUSAL_MASK_CONCEPTS: tuple[Concept, ...] = (
    Concept("sees-itself", "Each token attends to itself", ("A-edge-6", "A-edge-3"),
            ("square",), _sees_itself),
    Concept("no-future", "No token attends to a later one", ("A-edge-6",), ("square",),
            _no_future),
    Concept("kv-cache-aligned", "After a KV cache the last query sees every key",
            ("A-edge-6",), ("kv-cache",), _last_query_sees_all),
)

# --------------------------------------------------------------------------- positional encoding


def positional_encoding_probes(make: Maker) -> list[Probe]:
    d_small = int(make.rng.choice([6, 8]))
    return [
        _probe("small", (4, d_small), "unbatched", bank=("A-why-6",), traced=True, repeat=True),
        _probe("medium", (9, 16), "unbatched", bank=("A-why-6",)),
        _probe("long", (int(make.rng.integers(40, 60)), 32), "unbatched",
               bank=("A-why-6", "A-edge-4")),
        _probe("wide", (12, 64), "unbatched", bank=("A-why-6",), traced=True),
        _probe("one-position", (1, 10), "unbatched", bank=("A-err-4",)),
    ]


def _distinct_rows(r: Outcomes) -> Verdict:
    pe = _out(r, "long")
    if pe.ndim != 2:
        return False, f"the encoding should be (n_positions, d_model); got shape {pe.shape}."
    gaps = np.abs(pe[:, None, :] - pe[None, :, :]).max(-1) + np.eye(len(pe))
    ok = bool(gaps.min() > 1e-6)
    return ok, ("every position gets its own encoding, so identical tokens at different "
                "positions differ." if ok else
                "two positions get the same encoding: identical tokens there would stay "
                "indistinguishable.")


def _bounded(r: Outcomes) -> Verdict:
    pe = _out(r, "wide")
    ok = bool(np.all(np.abs(pe) <= 1 + ATOL))
    return ok, ("every value is a sine or cosine, in [-1, 1]." if ok else
                f"values must be sines and cosines, in [-1, 1]; yours reach {np.abs(pe).max():.4g}.")


def _shift_is_rotation(r: Outcomes) -> Verdict:
    """PE[p + k] is PE[p] turned pair by pair by an angle that depends on k alone."""
    pe = _out(r, "long")
    if pe.ndim != 2 or pe.shape[1] % 2:
        return False, f"the encoding should be (n_positions, d_model); got shape {pe.shape}."
    pairs = pe.reshape(len(pe), -1, 2)
    k = 3
    first, later = pairs[:-k], pairs[k:]
    # for each pair, the 2x2 map taking rows p to rows p + k, fitted then checked on every p
    for i in range(pairs.shape[1]):  # (float32 answers are exact to about 1e-6 only)
        fitted, *_ = np.linalg.lstsq(first[:, i], later[:, i], rcond=None)
        rotation = np.allclose(fitted.T @ fitted, np.eye(2), atol=1e-4)
        if not rotation or not np.allclose(first[:, i] @ fitted, later[:, i], atol=1e-4):
            return False, (f"moving {k} positions should turn each (sin, cos) pair by a fixed "
                           f"angle; pair {i} of your encoding does not turn so.")
    return True, "moving k positions turns every (sin, cos) pair by an angle that depends on k."


POSITIONAL_ENCODING_CONCEPTS: tuple[Concept, ...] = (
    Concept("positions-differ", "Identical tokens at different positions are told apart",
            ("A-edge-4", "A-why-6"), ("long",), _distinct_rows),
    Concept("values-bounded", "Every value is in [-1, 1]", ("A-why-6",), ("wide",), _bounded),
    Concept("shift-is-rotation", "A shift of k positions is a fixed rotation of each pair",
            ("A-why-6",), ("long",), _shift_is_rotation),
)

# -------------------------------------------------------------------------------------------- RoPE


def rope_probes(make: Maker) -> list[Probe]:
    g = make.grid
    start = int(make.rng.integers(5, 12))
    jumps = np.array(sorted(make.rng.choice(np.arange(1, 40), size=5, replace=False)))
    jumps[0] = 0 if jumps[0] > 3 else jumps[0]
    q, k = g(8), g(8)
    pair_distance = np.stack([q, k, q, k])
    return [
        _probe("default", (g(5, 8),), "unbatched", bank=("A-why-6",), traced=True, repeat=True),
        _probe("offset", (g(4, 8), np.arange(start, start + 4)), "unbatched",
               bank=("A-err-4",)),
        _probe("jumps", (g(5, 16), jumps), "unbatched", bank=("A-err-4",), traced=True),
        _probe("theta", (g(3, 6), None, 500.0), "unbatched", bank=("A-why-6",)),
        _probe("theta-and-positions", (g(4, 12), np.arange(2, 10, 2), 1.0e6), "unbatched",
               bank=("A-why-6",)),
        _probe("batched", (g(2, 3, 5, 8), np.arange(start, start + 5)), "batched",
               bank=("B-20",)),
        _probe("position-zero", (g(3, 8), np.zeros(3, dtype=np.int64)), "unbatched", "concept",
               bank=("A-why-6",)),
        _probe("relative", (pair_distance, np.array([0, 3, 5, 8])), "unbatched", "concept",
               bank=("A-why-6",)),
    ]


def _norms_kept(r: Outcomes) -> Verdict:
    x, out = r["jumps"][0].args[0], _out(r, "jumps")
    if out.shape != x.shape:
        return False, f"the output should have the input's shape {x.shape}; got {out.shape}."
    norms_in = np.hypot(x[..., 0::2], x[..., 1::2])
    norms_out = np.hypot(out[..., 0::2], out[..., 1::2])
    ok = _close(norms_out, norms_in, 1e-6)
    return ok, ("each pair (2i, 2i+1) keeps its length: RoPE only rotates." if ok else
                "a rotation keeps the length of each pair (2i, 2i+1); your output changes it.")


def _position_zero(r: Outcomes) -> Verdict:
    x, out = r["position-zero"][0].args[0], _out(r, "position-zero")
    ok = _close(out, x, 1e-9)
    return ok, ("at position 0 the rotation is the identity." if ok else
                "every token at position 0 should come back unchanged (a rotation by angle 0).")


def _relative(r: Outcomes) -> Verdict:
    out = _out(r, "relative")
    if out.shape != (4, 8):
        return False, f"the output should have shape (4, 8); got {out.shape}."
    near, far = float(out[0] @ out[1]), float(out[2] @ out[3])
    ok = abs(near - far) <= 1e-6 * max(1.0, abs(near))
    return ok, ("the rotated query and key score the same at positions (0, 3) and (5, 8): "
                "only their distance counts." if ok else
                f"the same query and key at positions (0, 3) and (5, 8) should score the same "
                f"(only the distance 3 counts); yours give {near:.6g} and {far:.6g}.")


ROPE_CONCEPTS: tuple[Concept, ...] = (
    Concept("pair-norms-kept", "RoPE keeps each pair's length", ("A-why-6",), ("jumps",),
            _norms_kept),
    Concept("position-zero-identity", "Position 0 is the identity", ("A-why-6",),
            ("position-zero",), _position_zero),
    Concept("relative-positions", "Rotated scores depend only on the distance", ("A-why-6",),
            ("relative",), _relative),
)

# ----------------------------------------------------------------------- causal self-attention


def causal_self_attention_probes(make: Maker) -> list[Probe]:
    g = make.grid
    w8, w12, w16 = _weights(make, 8), _weights(make, 12), _weights(make, 16)
    later = g(5, 8)
    changed = later.copy()
    changed[-1] = g(8) + 1.0
    # identity W_q, W_k: the last feature of each (4-wide) head carries a huge query score
    big = g(3, 8) * 0.5
    for head in range(2):
        big[:, 4 * head + 3] = np.sqrt(STABILITY_OFFSET) * np.array([1.0, 1.02, 0.97])
    eye = np.eye(8)
    # rows far apart: W_k reads feature 2 (always 1) into the last feature of each head, where
    # the queries carry 0, -1500, -3000 (times sqrt(d_k)): row i's scores sit near its offset
    apart = g(3, 8) * 0.1
    w_k_apart = eye.copy()
    for head in range(2):
        apart[:, 4 * head + 2] = 1.0
        apart[:, 4 * head + 3] = np.array(UNDERFLOW_OFFSETS) * 2.0
        w_k_apart[:, 4 * head + 3] = eye[4 * head + 2]
    return [
        _probe("far-apart-rows", (apart, eye, w_k_apart, w8[2], w8[3], 2), "unbatched",
               "large", bank=("B-10",)),
        _probe("two-heads", (g(5, 8), *w8, 2), "unbatched", bank=("A-edge-6",), traced=True,
               repeat=True),
        _probe("four-heads", (g(6, 16), *w16, 4), "unbatched", bank=("A-edge-6", "B-16")),
        _probe("one-head", (g(3, 12), *w12, 1), "unbatched", bank=("A-edge-6",)),
        _probe("rope", (g(5, 8), *w8, 2, 10000.0), "unbatched", "rope", bank=("A-why-6",),
               traced=True),
        _probe("rope-small-theta", (g(6, 12), *w12, 2, 100.0), "unbatched", "rope",
               bank=("A-why-6",)),
        _probe("rope-four-heads", (g(5, 16), *w16, 4, 1000.0), "unbatched", "rope",
               bank=("A-why-6", "A-err-7")),
        _probe("batched", (g(2, 5, 8), *w8, 2), "batched", bank=("B-20",)),
        _probe("batched-rope", (g(2, 4, 16), *w16, 4, 500.0), "batched", "rope",
               bank=("B-20",)),
        _probe("key-square", (g(4, 8), *w8, 2), "unbatched", "coincidence",
               bank=("A-err-2",)),
        _probe("large-logits", (big, eye, eye, w8[2], w8[3], 2), "unbatched", "large",
               bank=("B-10", "A-edge-2")),
        _probe("future-a", (later, *w8, 2), "unbatched", "concept", "no-diagnosis",
               bank=("A-edge-6", "A-tf-1")),
        _probe("future-b", (changed, *w8, 2), "unbatched", "concept", "no-diagnosis",
               bank=("A-edge-6", "A-tf-1")),
        _probe("single-token", (g(1, 8), *w8, 2), "unbatched", "concept",
               bank=("A-edge-3",)),
    ]


def _future_unseen(r: Outcomes) -> Verdict:
    a, b = _out(r, "future-a"), _out(r, "future-b")
    if a.shape != b.shape or a.ndim != 2:
        return False, f"the outputs should be (n, d_model); got {a.shape} and {b.shape}."
    ok = _close(a[:-1], b[:-1], 1e-6)
    return ok, ("changing the last token changes no earlier output: no position sees the "
                "future." if ok else
                "changing only the last token changed earlier outputs: some position attends to "
                "a later one. A causal model must never see the future.")


def _single_token(r: Outcomes) -> Verdict:
    probe = r["single-token"][0]
    x, _, _, w_v, w_o, _ = probe.args
    out = _out(r, "single-token")
    expected = x @ w_v @ w_o
    ok = _close(out, expected, 1e-6)
    return ok, ("a sequence of one token attends to itself alone: its output is its own "
                "value, projected." if ok else
                "with one token the only key is the token itself, so its weight is 1 and the "
                "output is (x W_v) W_o; yours is not.")


CAUSAL_SELF_ATTENTION_CONCEPTS: tuple[Concept, ...] = (
    Concept("future-unseen", "Changing a later token changes no earlier output",
            ("A-edge-6", "A-tf-1"), ("future-a", "future-b"), _future_unseen),
    Concept("single-token-itself", "A single token attends to itself", ("A-edge-3",),
            ("single-token",), _single_token),
)
