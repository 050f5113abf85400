"""Noise calibration and samplers shared by all methods (docs/choices.md#noise-samplers, docs/choices.md#privacy-formulas)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


# The smallest epsilon any calibration takes. Below it the Gaussian noise multiplier z = sqrt(2 ln(1.25/delta)) /
# epsilon (Dwork & Roth Thm A.1), or its square (the step sizes of HUANG eqs. (29), (34)), overflows a float for some
# delta: with ln(1.25/delta) <= 709 (any delta of at least 1e-307, where 1.25/delta is still a finite double),
# z^2 <= 1418 / epsilon^2 stays finite for every epsilon >= 1e-150. Noise of more than 1e150 times the sensitivity
# makes no run of any meaning either. (A delta below that makes z infinite: gaussian_multiplier says so.)
MIN_EPSILON = 1e-150


def check_epsilon_delta(epsilon: float, delta: float | None = None, *, max_epsilon: float | None = None) -> None:
    """Raise a clear ValueError for an invalid privacy budget (epsilon below MIN_EPSILON: too small to calibrate)."""
    if not np.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if epsilon < MIN_EPSILON:
        raise ValueError(f"epsilon = {epsilon!r}" + (f" (delta = {delta!r})" if delta is not None else "")
                         + f" is too small to calibrate: the smallest epsilon a calibration takes is {MIN_EPSILON:g} "
                         "(below it the noise multiplier sqrt(2 ln(1.25/delta)) / epsilon, or its square, can overflow "
                         "a float)")
    if max_epsilon is not None and epsilon > max_epsilon:
        raise ValueError(f"epsilon must be <= {max_epsilon} for this mechanism's guarantee, got {epsilon}")
    if delta is not None and not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")


def gaussian_multiplier(epsilon: float, delta: float) -> float:
    """Noise multiplier z = sigma / sensitivity of the classic Gaussian mechanism: sqrt(2 ln(1.25/delta)) / epsilon.

    (Dwork & Roth Thm A.1; HUANG eq. (14)/(26), HU Thm 1.) The (epsilon, delta) guarantee of this calibration is
    proven for epsilon < 1; callers that go beyond say so.
    """
    check_epsilon_delta(epsilon, delta)
    z = float(np.sqrt(2.0 * np.log(1.25 / delta)) / epsilon)
    if not np.isfinite(z * z):   # not reached for epsilon >= MIN_EPSILON; kept so that no inf is ever returned
        raise ValueError(f"epsilon = {epsilon!r}, delta = {delta!r} is too small to calibrate: the noise multiplier "
                         f"sqrt(2 ln(1.25/delta)) / epsilon = {z:g} (or its square) is not a finite number")
    return z


def gaussian_sigma(sensitivity, epsilon: float, delta: float):
    """sigma = sensitivity * sqrt(2 ln(1.25/delta)) / epsilon (elementwise in `sensitivity`)."""
    return np.asarray(sensitivity, dtype=float) * gaussian_multiplier(epsilon, delta) if np.ndim(sensitivity) \
        else float(sensitivity) * gaussian_multiplier(epsilon, delta)


def gamma_norm(rng: np.random.Generator, d: int, alpha, size: tuple[int, ...] = ()) -> np.ndarray:
    """Samples with density proportional to exp(-alpha ||x||_2) on R^d (ZKL's "l2-Laplace" noise; docs/choices.md#noise-samplers).

    The norm is Gamma(shape=d, scale=1/alpha) and the direction uniform on the sphere, so E||x|| = d / alpha.
    `alpha` broadcasts against `size` (e.g. one alpha per node). Returns shape size + (d,).
    """
    alpha = np.asarray(alpha, dtype=float)
    if np.any(alpha <= 0):
        raise ValueError(f"the noise parameter alpha must be > 0, got {alpha}")
    g = rng.standard_normal(size + (d,))
    r = rng.gamma(d, 1.0, size=size) / np.broadcast_to(alpha, size)
    return g * (r / np.linalg.norm(g, axis=-1))[..., None]


def stacked_gamma_norm(rngs: Sequence[np.random.Generator], d: int, alpha, size: tuple[int, ...] = ()) -> np.ndarray:
    """`gamma_norm` per repeat generator, stacked on a leading repeat axis."""
    return np.stack([gamma_norm(g, d, alpha, size) for g in rngs])
