"""l1 and l2 regularisers of Huang et al. (docs/choices.md#huang-objective), batched over any leading axes of w (..., d).

* l1: R(w) = ||w||_1, subgradient R'(w) = sgn(w) with sgn(0) = 0 (MATLAB `sign`, docs/choices.md#numerical-conventions), prox = soft threshold.
* l2: R(w) = ||w||^2 / 2 (eq. (39a) uses -(lambda/n) w-tilde, so the 1/2 is there), gradient w.
"""

from __future__ import annotations

import numpy as np

REGULARIZERS = ("l1", "l2")


def check(reg: str) -> str:
    if reg not in REGULARIZERS:
        raise ValueError(f"regulariser must be one of {REGULARIZERS}, got {reg!r}")
    return reg


def value(reg: str, w):
    """R(w): (...)."""
    if check(reg) == "l1":
        return np.abs(w).sum(axis=-1)
    return 0.5 * (w * w).sum(axis=-1)


def subgradient(reg: str, w):
    """R'(w): sgn(w) for l1 (eqs. (38a)), w for l2 (eq. (39a))."""
    return np.sign(w) if check(reg) == "l1" else w


def prox_l1(v, t):
    """argmin_w t ||w||_1 + ||w - v||^2 / 2 (soft thresholding at t)."""
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)
