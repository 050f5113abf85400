"""Choose a mechanism's noise parameter so that its TOTAL privacy guarantee meets a target epsilon (at a delta).

Every function here is pure: a monotone map "noise parameter -> total epsilon" in, the parameter that meets the
target from below out (a `Calibration`). "Meets" means eps(x) <= target (never above: the guarantee holds) and
eps(x) >= (1 - rtol) target (no noise wasted); rtol defaults to 0.2%, inside the 1% the frontier promises.

* `solve`: the root finder (Illinois regula falsi on log x / log eps, keeping a bracket, so it always converges;
  total epsilon is close to a power of the noise parameter, so it needs a handful of evaluations).
* `gaussian_multiplier`: the noise multiplier z of `steps` composed Gaussian mechanisms, by dp-accounting's PLD
  accountant, started from the exact analytic-Gaussian value (`gaussian_multiplier_exact`).
* `pure_epsilon_step`: the per-step epsilon of `steps` equal pure-DP steps whose composition meets the target.
* `pure_schedule`: two-stage calibration for bounds with a noise-free part (ZKL's Theorems): first the scale C
  so that the noise-free part of the bound uses `floor_share` of the target, then the noise parameter alpha.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import accounting


@dataclass(frozen=True)
class Calibration:
    """The parameter found, the total epsilon it gives, the target, and how many evaluations it took."""

    value: float
    epsilon: float
    target: float
    evaluations: int

    @property
    def rel_gap(self) -> float:
        """(target - epsilon) / target: >= 0, and small."""
        return (self.target - self.epsilon) / self.target


def _check_target(target: float, delta: float | None = None) -> None:
    if not (np.isfinite(target) and target > 0):
        raise ValueError(f"the target epsilon must be a positive number, got {target!r}")
    if delta is not None and not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")


def solve(eps_of: Callable[[float], float], target: float, *, lo: float, hi: float, increasing: bool,
          rtol: float = 2e-3, max_evals: int = 200) -> Calibration:
    """The x > 0 with eps_of(x) <= target and eps_of(x) >= (1 - rtol) target, for a monotone eps_of.

    increasing=True: epsilon grows with x (e.g. ZKL's alpha, an inverse noise scale); False: it falls (a noise
    multiplier). [lo, hi] is a first guess; it is widened geometrically until it brackets the target. Raises
    ValueError if no x in (1e-300, 1e300) brackets it, or if eps_of is not monotone on the bracket.
    """
    _check_target(target)
    if not 0 < lo < hi:
        raise ValueError(f"need 0 < lo < hi, got {lo}, {hi}")
    if not 0 < rtol < 1:
        raise ValueError(f"rtol must lie in (0, 1), got {rtol}")
    n = 0

    def f(x):
        nonlocal n
        n += 1
        return float(eps_of(x))

    safe_is_lo = increasing  # the end of the bracket whose epsilon is below the target
    flo, fhi = f(lo), f(hi)
    for _ in range(2000):  # widen until f(safe end) <= target < f(other end)
        f_safe, f_other = (flo, fhi) if safe_is_lo else (fhi, flo)
        if f_safe <= target < f_other:
            break
        if f_safe > target:  # move the safe end outwards
            if safe_is_lo:
                lo, hi, fhi = lo / 4.0, lo, flo
                flo = f(lo)
            else:
                lo, hi, flo = hi, hi * 4.0, fhi
                fhi = f(hi)
        else:  # the other end is still below the target
            if safe_is_lo:
                lo, flo = hi, fhi
                hi *= 4.0
                fhi = f(hi)
            else:
                hi, fhi = lo, flo
                lo /= 4.0
                flo = f(lo)
        if not (1e-300 < lo and hi < 1e300):
            raise ValueError(f"no parameter brings the total epsilon to {target:g} (last bracket [{lo:.3g}, "
                             f"{hi:.3g}], epsilons {flo:.4g}, {fhi:.4g})")
    else:
        raise ValueError("could not bracket the target epsilon")

    def g(v):  # log-distance to the target; finite for eps = 0 via a floor
        return math.log(max(v, 1e-300)) - math.log(target)

    a, b = math.log(lo), math.log(hi)
    ga, gb = g(flo), g(fhi)
    side = 0
    while n < max_evals:
        safe_x, safe_f = (lo, flo) if safe_is_lo else (hi, fhi)
        if safe_f >= (1.0 - rtol) * target or b - a < 1e-13:
            return Calibration(safe_x, safe_f, float(target), n)
        c = (a * gb - b * ga) / (gb - ga) if gb != ga else 0.5 * (a + b)
        if not a < c < b:
            c = 0.5 * (a + b)
        x = math.exp(c)
        fx = f(x)
        gx = g(fx)
        if (fx <= target) == safe_is_lo:  # x replaces lo
            if side == -1:
                gb *= 0.5
            a, ga, lo, flo, side = c, gx, x, fx, -1
        else:
            if side == 1:
                ga *= 0.5
            b, gb, hi, fhi, side = c, gx, x, fx, 1
        if (flo > fhi) == increasing and flo != fhi:
            raise ValueError("the total epsilon is not monotone in the parameter on the bracket")
    safe_x, safe_f = (lo, flo) if safe_is_lo else (hi, fhi)
    return Calibration(safe_x, safe_f, float(target), n)


def gaussian_multiplier(target: float, delta: float, steps: int, *, rtol: float = 2e-3) -> Calibration:
    """Noise multiplier z (sigma / l2-sensitivity) of `steps` full-batch Gaussian mechanisms whose composition has
    total epsilon `target` at `delta`, by dp-accounting's PLD (tight) accountant.

    Starts from the exact value (analytic Gaussian of the composition, `accounting.analytic_gaussian_epsilon`); the
    accountant can only overstate epsilon, so its z is at least that.
    """
    _check_target(target, delta)
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    disc = accounting.pld_grid(target)

    def eps_of(z):
        return accounting.pld_epsilon(z, delta, steps=int(steps), discretization=disc)

    z0 = gaussian_multiplier_exact(target, delta, steps).value
    return solve(eps_of, target, lo=z0, hi=z0 * 1.05, increasing=False, rtol=rtol)


def gaussian_multiplier_exact(target: float, delta: float, steps: int, *, rtol: float = 1e-6) -> Calibration:
    """Noise multiplier z of `steps` composed Gaussian mechanisms whose exact total (the analytic Gaussian of
    mu = sqrt(steps) / z, `accounting.analytic_gaussian_epsilon`) is `target` at `delta`: no PLD discretisation."""
    _check_target(target, delta)
    return solve(lambda z: accounting.analytic_gaussian_epsilon(z, delta, steps=int(steps)), target,
                 lo=1.0, hi=2.0, increasing=False, rtol=rtol)


def pure_epsilon_step(target: float, delta: float, steps: int, *, how: str = "optimal",
                      rtol: float = 2e-3) -> Calibration:
    """Per-step epsilon e of `steps` adaptively composed e-DP mechanisms with total `target` at `delta`
    (how="optimal": dp-accounting PLD; "basic": e = target / steps exactly)."""
    _check_target(target, delta)
    if how == "basic":
        return Calibration(target / steps, target, float(target), 0)
    return solve(lambda e: accounting.pure_composed_epsilon(np.full(int(steps), e), delta, how=how), target,
                 lo=target / steps, hi=2.0 * target / steps, increasing=True, rtol=rtol)


def pure_total(per_step: np.ndarray, delta: float, how: str) -> float:
    """Total epsilon of a pure-DP bound given per step and per node, shape (steps, nodes): the worst node's
    composition (a record lives at one node, and only that node's releases depend on it). Nodes whose budgets are
    at most another node's at every step cannot be the worst and are skipped."""
    per_step = np.asarray(per_step, dtype=float)
    if per_step.ndim == 1:
        per_step = per_step[:, None]
    cols = np.unique(per_step, axis=1)
    keep = [j for j in range(cols.shape[1])
            if not any(k != j and np.all(cols[:, j] <= cols[:, k]) for k in range(cols.shape[1]))]
    return max(accounting.pure_composed_epsilon(cols[:, j], delta, how=how) for j in keep)


@dataclass(frozen=True)
class ScheduleCalibration:
    """Result of `pure_schedule`: the scale C, the noise parameter alpha, and the totals."""

    C: float
    alpha: float
    epsilon: float
    target: float
    floor: float            # total epsilon of the noise-free part alone (alpha -> 0) at this C
    C_capped: bool          # C hit its upper limit (then the floor uses less than floor_share of the target)
    evaluations: int

    @property
    def rel_gap(self) -> float:
        return (self.target - self.epsilon) / self.target


def pure_schedule(per_step: Callable[[float, float], np.ndarray], target: float, delta: float, *, how: str,
                  floor_share: float, C_max: float, rtol: float = 2e-3) -> ScheduleCalibration:
    """Calibrate a pure-DP bound of the form per_step(C, alpha) (steps x nodes), increasing in C and in alpha, with
    a part that no noise removes (per_step(C, 0) > 0; ZKL's "1.4 c_1" Jacobian term).

    1. C: the largest C <= C_max whose noise-free part totals floor_share * target (C_max if that is smaller).
    2. alpha: by `solve`, so that the whole bound totals the target.
    """
    _check_target(target, delta)
    if not 0 < floor_share < 1:
        raise ValueError(f"floor_share must lie in (0, 1), got {floor_share}")
    if not C_max > 0:
        raise ValueError(f"C_max must be > 0, got {C_max}")
    n = 0
    floor_at_max = pure_total(per_step(C_max, 0.0), delta, how)
    n += 1
    if floor_at_max <= floor_share * target:
        C, capped, floor = float(C_max), True, floor_at_max
    else:
        cal_C = solve(lambda c: pure_total(per_step(c, 0.0), delta, how), floor_share * target,
                      lo=C_max * floor_share * target / floor_at_max, hi=C_max, increasing=True, rtol=rtol)
        C, capped, floor, n = cal_C.value, False, cal_C.epsilon, n + cal_C.evaluations
    cal_a = solve(lambda a: pure_total(per_step(C, a), delta, how), target, lo=1e-3, hi=1.0, increasing=True,
                  rtol=rtol)
    return ScheduleCalibration(C=C, alpha=cal_a.value, epsilon=cal_a.epsilon, target=float(target), floor=floor,
                               C_capped=capped, evaluations=n + cal_a.evaluations)
