"""The ``positional_encoding`` task (SPEC section 1, "The rest of the attention unit"): the
sinusoidal encoding, and its pipeline."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reference.stages import Array, Recipe, Stages, choice, knobs

CORRECT = knobs(pe_layout="interleaved", pe_trig="sin_even", pe_exponent="pair",
                pe_frequency="divide", pe_positions="from_zero")


def positional_encoding(n_positions: int, d_model: int) -> NDArray[np.float64]:
    """The sinusoidal encoding: PE[p, 2i] = sin(p / 10000**(2i/d)), PE[p, 2i+1] = cos(same)."""
    position = np.arange(n_positions, dtype=np.float64)[:, None]
    pair = np.arange(d_model) // 2
    angle = position / 10000.0 ** (2 * pair / d_model)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))


def reference(n_positions: int, d_model: int) -> tuple[NDArray[np.float64]]:
    """The task's outputs: (output,)."""
    return (positional_encoding(n_positions, d_model),)


def pipeline(recipe: Recipe, n_positions: int, d_model: int,
             record: Stages | None = None) -> tuple[Array]:
    """The ``positional_encoding`` task under ``recipe``: (output,)."""
    feature = np.arange(d_model)
    if choice(recipe, "pe_layout") == "interleaved":
        pair, is_sin = feature // 2, feature % 2 == 0
    else:  # [sin | cos]: the first half sines of pairs 0.., the second half their cosines
        half = (d_model + 1) // 2
        pair, is_sin = feature % half, feature < half
    if choice(recipe, "pe_trig") == "swapped":
        is_sin = ~is_sin
    # "pair_twice": 2 * i with i stepping 0, 2, 4, ... (the loop's i is the pair's first feature)
    exponent = {"pair": 2 * pair, "feature_twice": 2 * feature, "feature": feature,
                "pair_twice": 4 * pair, "missing_two": pair}[choice(recipe, "pe_exponent")] / d_model
    frequency = 10000.0 ** (exponent if choice(recipe, "pe_frequency") == "multiply"
                            else -exponent)
    first = 1 if choice(recipe, "pe_positions") == "from_one" else 0
    position = np.arange(first, first + n_positions, dtype=np.float64)[:, None]
    with np.errstate(all="ignore"):
        angle = position * frequency
        encoding = np.where(is_sin, np.sin(angle), np.cos(angle))
    if record is not None:  # per feature, and per pair (the sines' columns) as code keeps them
        record.update(positions=position[:, 0], pair_frequencies=frequency[is_sin],
                      frequencies=frequency, pair_angles=angle[:, is_sin], angles=angle,
                      output=encoding)
    return (encoding,)
