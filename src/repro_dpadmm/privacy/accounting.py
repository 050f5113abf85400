"""One privacy accountant for all Gaussian mechanisms (dp-accounting), and the classic moments-accountant formula.

`composed_gaussian_epsilon` composes per-step Gaussian mechanisms (full batch, no subsampling) through
dp-accounting's RDP and PLD accountants; `moments_accountant_epsilon` is the classic conversion
min_lambda [t lambda (lambda+1)/(2 z^2) + ln(1/delta)] / lambda a hand-written moments accountant (HUANG §IV-C) uses,
so reports can show all three side by side (docs/choices.md#privacy-formulas, docs/choices.md#huang-total-privacy).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np


class _OnFirstUse:
    """The dp_accounting package, imported (all of it) on the first attribute access. `import dp_accounting` pulls
    in scipy.signal and scipy.stats (about 0.6 s of a process's start-up); processes that import this library but
    never account (the workflow reading the frontier's job list, the items without privacy totals) then do not pay
    for it. A plain proxy, not importlib's LazyLoader: nothing half-imported is registered in sys.modules, so a
    pickle that imports dp_accounting.dp_event first (a part file's records) gets the same classes as this module."""

    def __getattr__(self, name: str):
        return getattr(importlib.import_module("dp_accounting"), name)


dp_accounting = _OnFirstUse()


class LazyEvent(NamedTuple):
    """A dp-accounting DpEvent not built yet: `build()` returns `make(*args)`. `spend.gaussian_steps` and
    `spend.pure_steps` return one, so that a run which only records what it spent (a part, a job that never
    accounts) does not import dp-accounting (see `_OnFirstUse`). The event is built where it is read:
    `spend.Spend.event`, and `built` for an event passed on its own."""

    make: Callable
    args: tuple

    def build(self):
        return self.make(*self.args)


def built(event):
    """The DpEvent of `event` (a DpEvent, or a LazyEvent built now)."""
    return event.build() if isinstance(event, LazyEvent) else event


def _events(noise_multipliers: Sequence[float] | float, steps: int | None):
    if np.ndim(noise_multipliers) == 0:
        if steps is None or steps < 1:
            raise ValueError("give steps >= 1 with a scalar noise multiplier")
        z = float(noise_multipliers)
        if z <= 0:
            raise ValueError(f"noise multiplier must be > 0, got {z}")
        return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), int(steps))
    zs = np.asarray(noise_multipliers, dtype=float).ravel()
    if zs.size == 0 or zs.min() <= 0:
        raise ValueError("noise multipliers must be > 0")
    # equal multipliers as one self-composition (the PLD accountant then convolves once per distinct value)
    values, counts = np.unique(zs, return_counts=True)
    return dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(float(z)),
                                                                            int(k)) for z, k in zip(values, counts)])


def rdp_epsilon(noise_multipliers, delta: float, steps: int | None = None) -> float:
    """Total epsilon at `delta` for composed Gaussian mechanisms (sensitivity 1 each), via RDP."""
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(_events(noise_multipliers, steps))
    return float(acc.get_epsilon(delta))


def pld_grid(target_epsilon: float) -> float:
    """PLD discretisation interval for a total near `target_epsilon`: a small fraction of it (the PLD rounds each
    step's privacy loss up by at most one cell), at most 1e-4."""
    return min(1e-4, 2e-4 * target_epsilon)


def pld_epsilon(noise_multipliers, delta: float, steps: int | None = None,
                discretization: float = 1e-4) -> float:
    """Total epsilon at `delta` for composed Gaussian mechanisms via privacy loss distributions (tight)."""
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=discretization)
    acc.compose(_events(noise_multipliers, steps))
    return float(acc.get_epsilon(delta))


def moments_accountant_epsilon(noise_multiplier: float, steps: int, delta: float,
                               max_lambda: float | None = None, integer_lambda: bool = False) -> float:
    """Classic moments accountant for `steps` full-batch Gaussian steps (docs/choices.md#privacy-formulas, docs/choices.md#huang-total-privacy).

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


def analytic_gaussian_epsilon(noise_multiplier: float, delta: float, steps: int = 1) -> float:
    """Exact epsilon at `delta` of `steps` composed Gaussian mechanisms (sensitivity 1, multiplier z), no dp-accounting.

    The composition is mu-GDP with mu = sqrt(steps) / z (Dong, Roth, Su 2019, Cor. 3.3), whose (epsilon, delta) curve
    is Balle & Wang's (2018, Thm 8) analytic Gaussian mechanism:
    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), decreasing in eps; solved by brentq.
    An independent reference for the dp-accounting accountants (tests), and a starting bracket for calibration.
    """
    from scipy.optimize import brentq
    from scipy.stats import norm

    z, t = float(noise_multiplier), int(steps)
    if z <= 0 or t < 1 or not 0 < delta < 1:
        raise ValueError("need noise multiplier > 0, steps >= 1, delta in (0, 1)")
    mu = np.sqrt(t) / z

    def excess(eps):  # delta(eps) - delta, with e^eps Phi(.) evaluated in log space
        return norm.cdf(-eps / mu + mu / 2) - np.exp(eps + norm.logcdf(-eps / mu - mu / 2)) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = max(1.0, mu * mu)
    while excess(hi) > 0:
        hi *= 2.0
    return float(brentq(excess, 0.0, hi, xtol=1e-12, rtol=1e-12))


def pure_composed_epsilon(epsilons: Sequence[float], delta: float, *, how: str = "optimal",
                          discretization: float | None = None) -> float:
    """Total epsilon at `delta` of adaptively composed pure-DP mechanisms with per-step budgets `epsilons`.

    how="basic": sum(epsilons) (delta = 0; the papers' own composition, e.g. ZKL's P(T) and HUANG's DVP).
    how="optimal": dp-accounting's privacy loss distributions of the (eps_t, 0) dominating pairs (randomised
    response), composed: the optimal composition (Kairouz, Oh, Viswanath 2015; heterogeneous: Murtagh & Vadhan
    2016), up to the PLD's pessimistic discretisation (it can only overstate epsilon). The default grid,
    1e-3 * sum(eps) / steps, bounds the rounding (at most one grid step per composition) by 0.1% of the basic
    total (measured: 0.1-0.2% of the optimal total for 100 steps; tests compare with the exact binomial formula).
    """
    eps = np.asarray(epsilons, dtype=float).ravel()
    if eps.size == 0 or np.any(eps < 0) or not np.all(np.isfinite(eps)):
        raise ValueError("per-step epsilons must be a non-empty list of finite values >= 0")
    if how == "basic":
        return float(eps.sum())
    if how != "optimal":
        raise ValueError(f"how must be 'basic' or 'optimal', got {how!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    from dp_accounting.pld import common, privacy_loss_distribution as pld

    eps = eps[eps > 0]
    if eps.size == 0:
        return 0.0
    disc = discretization or max(1e-3 * eps.sum() / eps.size, 1e-9)
    values, counts = np.unique(eps, return_counts=True)  # equal budgets compose by self-composition (fast)
    total = None
    for e, k in zip(values, counts):
        p = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(float(e), 0.0),
                                        value_discretization_interval=disc)
        p = p.self_compose(int(k)) if k > 1 else p
        total = p if total is None else total.compose(p)
    return float(total.get_epsilon_for_delta(delta))


def gaussian_multipliers(event) -> np.ndarray | None:
    """The per-step noise multipliers of an event made only of (self-)composed `GaussianDpEvent`s (e.g. from
    `privacy.spend.gaussian_steps`), in composition order; None for any other event."""
    event = built(event)
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return np.array([float(event.noise_multiplier)])
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = gaussian_multipliers(event.event)
        return None if inner is None else np.tile(inner, event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [gaussian_multipliers(e) for e in event.events]
        return None if not parts or any(p is None for p in parts) else np.concatenate(parts)
    return None
