"""Seeded randomness (docs/choices.md#seeded-randomness).

Every stochastic choice draws from a `numpy.random.Generator` derived from the config seed with
`SeedSequence.spawn`, so that any single run (one repeat of one setting) can be regenerated alone.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np


def _key(label: str) -> int:
    return zlib.crc32(label.encode())


def seed_sequence(seed: int, *labels: str) -> np.random.SeedSequence:
    """A SeedSequence for `seed` specialised by string labels (e.g. item, setting name)."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence([int(seed), *(_key(lab) for lab in labels)])


def repeat_generators(seed: int, repeats: int, *labels: str) -> list[np.random.Generator]:
    """One independent Generator per repeat: `repeat_generators(s, R)[r]` depends only on (s, labels, r)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    children = seed_sequence(seed, *labels).spawn(repeats)
    return [np.random.default_rng(c) for c in children]


def stacked_normal(rngs: Sequence[np.random.Generator], shape: tuple[int, ...], scale=1.0) -> np.ndarray:
    """Draw N(0, scale^2) of `shape` from each generator and stack them on a leading repeat axis."""
    out = np.stack([g.standard_normal(shape) for g in rngs])
    return out * scale if np.ndim(scale) == 0 else out * np.asarray(scale)
