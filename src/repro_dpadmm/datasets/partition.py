"""Seeded data splits: train/test, horizontal (samples across agents) and vertical (features across parties)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def train_test(n_samples: int, n_train: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random split into `n_train` training indices and the rest (e.g. HUANG's 40,000 / 5,222)."""
    if not 0 < n_train < n_samples:
        raise ValueError(f"n_train must lie in (0, {n_samples}), got {n_train}")
    perm = rng.permutation(n_samples)
    return perm[:n_train], perm[n_train:]


def even(n_samples: int, n_parts: int, rng: np.random.Generator) -> np.ndarray:
    """(n_parts, n_samples // n_parts) random index blocks; the parts must divide the samples exactly (HUANG)."""
    if n_parts < 1:
        raise ValueError(f"number of agents must be >= 1, got {n_parts}")
    if n_samples % n_parts:
        raise ValueError(f"an even split needs the number of agents to divide the samples: {n_samples} samples "
                         f"over {n_parts} agents leaves {n_samples % n_parts}; choose n dividing {n_samples}")
    return rng.permutation(n_samples).reshape(n_parts, -1)


def near_even(n_samples: int, n_parts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffle, then `array_split` into near-equal parts (ZKL; docs/choices.md#zkl-networks)."""
    if not 1 <= n_parts <= n_samples:
        raise ValueError(f"cannot split {n_samples} samples over {n_parts} parts")
    return np.array_split(rng.permutation(n_samples), n_parts)


def uneven(n_samples: int, n_parts: int, min_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Sizes min_size + Multinomial(rest, Dirichlet(1)) (docs/choices.md#zkl-uneven-split), then a random assignment of samples."""
    rest = n_samples - n_parts * min_size
    if rest < 0:
        raise ValueError(f"{n_parts} parts of at least {min_size} need {n_parts * min_size} samples, "
                         f"have {n_samples}")
    sizes = min_size + rng.multinomial(rest, rng.dirichlet(np.ones(n_parts)))
    return np.split(rng.permutation(n_samples), np.cumsum(sizes)[:-1])


def vertical(n_features: int, boundaries: Sequence[int]) -> list[np.ndarray]:
    """Feature blocks [b_0, b_1), [b_1, b_2), ...; `boundaries` must start at 0 and end at n_features.

    Example: a9a with 66 | 57 is `vertical(123, [0, 66, 123])` (HU §5).
    """
    b = list(boundaries)
    if len(b) < 2 or b[0] != 0 or b[-1] != n_features:
        raise ValueError(f"feature split {b} must start at 0 and end at {n_features} so that it covers every "
                         "column exactly once")
    if any(hi <= lo for lo, hi in zip(b, b[1:])):
        raise ValueError(f"feature split {b} must be strictly increasing: every party needs at least one feature")
    return [np.arange(lo, hi) for lo, hi in zip(b, b[1:])]
