"""The logistic sigmoid and loss on whole arrays, in place, with numpy's vectorised exp and log1p.

numpy runs exp and log1p as SIMD loops where the CPU has them (AVX2, AVX-512): 3-4x faster than scipy's expit and
numpy's logaddexp, which call the C library once per element. Their values differ from the C library's by an ulp in
a few per cent of elements; numbers that rest on them move by round-off, or by a solver's tolerance where an ulp
decides a stopping test (benchmarks/tolerances.yaml). The compiled sweeps (kernels/consensus.py,
kernels/decentralized.py, kernels/logistic_term.py) keep the C library's exp inside their loops: numba has no
vectorised exp to call there.
"""

from __future__ import annotations

import numpy as np


def _check(z: np.ndarray) -> None:
    if not isinstance(z, np.ndarray) or z.dtype != np.float64 or not z.flags.writeable:
        raise ValueError("the in-place sigmoid and loss need a writeable float64 array")


def sigmoid_neg_inplace(z: np.ndarray) -> np.ndarray:
    """z <- sigma(-z) = 1 / (1 + e^z) in place; returns z. e^z overflows to inf for z > 709, which gives 0, the
    correct limit; NaN stays NaN."""
    _check(z)
    with np.errstate(over="ignore"):
        return sigmoid_neg_unchecked(z)


def sigmoid_neg_unchecked(z: np.ndarray) -> np.ndarray:
    """`sigmoid_neg_inplace` without its checks and its np.errstate, for a caller that loops over blocks of one array
    under one np.errstate(over="ignore") of its own (each costs microseconds: problems/logistic.py)."""
    np.exp(z, out=z)
    z += 1.0
    np.reciprocal(z, out=z)
    return z


def loss_inplace(z: np.ndarray) -> np.ndarray:
    """z <- ln(1 + e^{-z}) = max(-z, 0) + log1p(e^{-|z|}) in place; returns z. No overflow for any z; NaN stays
    NaN."""
    _check(z)
    m = np.maximum(np.negative(z), 0.0)
    np.abs(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    np.log1p(z, out=z)
    z += m
    return z
