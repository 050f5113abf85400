"""One privacy accountant for all Gaussian mechanisms (dp-accounting), and the classic moments-accountant formula.

`composed_gaussian_epsilon` composes per-step Gaussian mechanisms (full batch, no subsampling) through
dp-accounting's RDP and PLD accountants; `moments_accountant_epsilon` is the classic conversion
min_lambda [t lambda (lambda+1)/(2 z^2) + ln(1/delta)] / lambda a hand-written moments accountant (HUANG §IV-C) uses,
so reports can show all three side by side (SPEC §1.4, §2.4).
"""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting
import numpy as np


def _events(noise_multipliers: Sequence[float] | float, steps: int | None):
    if np.ndim(noise_multipliers) == 0:
        if steps is None or steps < 1:
            raise ValueError("give steps >= 1 with a scalar noise multiplier")
        z = float(noise_multipliers)
        if z <= 0:
            raise ValueError(f"noise multiplier must be > 0, got {z}")
        return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), int(steps))
    zs = [float(z) for z in noise_multipliers]
    if min(zs) <= 0:
        raise ValueError("noise multipliers must be > 0")
    return dp_accounting.ComposedDpEvent([dp_accounting.GaussianDpEvent(z) for z in zs])


def rdp_epsilon(noise_multipliers, delta: float, steps: int | None = None) -> float:
    """Total epsilon at `delta` for composed Gaussian mechanisms (sensitivity 1 each), via RDP."""
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(_events(noise_multipliers, steps))
    return float(acc.get_epsilon(delta))


def pld_epsilon(noise_multipliers, delta: float, steps: int | None = None,
                discretization: float = 1e-4) -> float:
    """Total epsilon at `delta` for composed Gaussian mechanisms via privacy loss distributions (tight)."""
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=discretization)
    acc.compose(_events(noise_multipliers, steps))
    return float(acc.get_epsilon(delta))


def moments_accountant_epsilon(noise_multiplier: float, steps: int, delta: float,
                               max_lambda: float | None = None, integer_lambda: bool = False) -> float:
    """Classic moments accountant for `steps` full-batch Gaussian steps (SPEC §1.4, §2.4).

    alpha_t(lambda) = t lambda (lambda + 1) / (2 z^2); eps = min_lambda [alpha_t(lambda) + ln(1/delta)] / lambda.
    Continuous lambda without a cap has the closed form t/(2z^2) + sqrt(2 t ln(1/delta)) / z. `integer_lambda`
    with `max_lambda=32` mimics Abadi et al.'s implementation.
    """
    z, t = float(noise_multiplier), int(steps)
    if z <= 0 or t < 1 or not 0 < delta < 1:
        raise ValueError("need noise multiplier > 0, steps >= 1, delta in (0, 1)")
    if max_lambda is None and not integer_lambda:
        return t / (2 * z * z) + np.sqrt(2 * t * np.log(1 / delta)) / z
    top = max_lambda if max_lambda is not None else 1e4
    lam = np.arange(1, int(top) + 1, dtype=float) if integer_lambda else np.linspace(1e-6, top, 200_001)
    return float(np.min((t * lam * (lam + 1) / (2 * z * z) + np.log(1 / delta)) / lam))


def gaussian_epsilon_exact(noise_multiplier: float, delta: float) -> float:
    """Exact epsilon of a single Gaussian mechanism at `delta` (Balle & Wang 2018, analytic Gaussian), via PLD.

    Used as the reference in tests; dp-accounting's PLD of one Gaussian is tight to discretisation.
    """
    return pld_epsilon(noise_multiplier, delta, steps=1, discretization=1e-5)
