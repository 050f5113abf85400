"""What a one-run audit of a Gaussian mechanism can show with m canaries, before running it: settings chosen by
calculation, not by trial and error.

A canary whose two states give a composed Gaussian with mean gap mu noise standard deviations (mu-GDP; a T-step
release with multiplier z relative to the canary's gap has mu = sqrt(T) / z) has a likelihood-ratio score
N(+mu/2, 1) or N(-mu/2, 1). Guessing "+1" for the k = f m / 2 highest of m such scores and "-1" for the k lowest
(the guesses of `one_run.audit`, half the canaries in each state) is right with probability
p = Phi(mu/2 - t) / (Phi(mu/2 - t) + Phi(-mu/2 - t)), t the score quantile that leaves k canaries above it. The
number of correct guesses is then about Binomial(2k, p); `expected_bound` evaluates an analysis at v = 2k p less
`sds` standard deviations (2 by default: the bound is reached in about 98% of runs), the best over the guess
fractions, each at the Bonferroni level the audit uses. `canaries_needed` is the smallest m whose expected bound
exceeds a target (e.g. the tight total a 4x control must be shown to exceed).
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.stats import norm

from .. import calibrate
from . import fdp_one_run, one_run

ANALYSES = ("steinke", "fdp", "gdp")
MAX_CANARIES = 10 ** 7


def _bound(analysis: str, m: int, r: int, v: int, delta: float, level: float) -> float:
    if analysis == "steinke":
        return one_run.epsilon_lower_bound(m, r, v, delta, level, tol=1e-5)
    if analysis == "fdp":
        return fdp_one_run.epsilon_lower_bound(m, r, v, delta, level)
    if analysis == "gdp":
        return fdp_one_run.gdp_epsilon(fdp_one_run.gdp_lower_bound(m, r, v, level), delta)
    raise ValueError(f"analysis must be one of {ANALYSES}, got {analysis!r}")


def expected_guesses(mu: float, m: int, fraction: float) -> tuple[int, float, float]:
    """(r, expected correct guesses, their standard deviation) for m canaries of mu and guess fraction `fraction`."""
    k = min(max(1, int(round(fraction * m / 2))), m // 2)
    if mu <= 0:
        return 2 * k, float(k), math.sqrt(2 * k) / 2
    share = k / m     # each tail holds this share of all canaries
    t = brentq(lambda t: 0.5 * (norm.sf(t - mu / 2) + norm.sf(t + mu / 2)) - share, -60, 60)
    hi, lo = norm.sf(t - mu / 2), norm.sf(t + mu / 2)
    p = hi / (hi + lo)
    return 2 * k, 2 * k * p, math.sqrt(2 * k * p * (1 - p))


def expected_bound(mu: float, m: int, delta: float, level: float, analysis: str = "gdp", *,
                   fractions: tuple = one_run.FRACTIONS, sds: float = 2.0) -> float:
    """The bound `analysis` gives at `sds` standard deviations below the expected correct guesses (best fraction)."""
    m = int(m)
    best = 0.0
    for f in fractions:
        r, ev, sd = expected_guesses(mu, m, f)
        v = int(min(r, max(0, math.floor(ev - sds * sd))))
        best = max(best, _bound(analysis, m, r, v, delta, level / len(fractions)))
    return best


def canaries_needed(mu: float, target: float, delta: float, level: float, analysis: str = "gdp", *,
                    fractions: tuple = one_run.FRACTIONS, sds: float = 2.0, rtol: float = 0.05) -> float:
    """The smallest m (to `rtol`) whose expected bound exceeds `target`; inf if no m up to 10^7 does (e.g. a target
    above what mu can show at all)."""
    if target >= fdp_one_run.gdp_epsilon(mu, delta):
        return math.inf      # no valid bound exceeds the canaries' own epsilon (the ceiling)
    if analysis not in ANALYSES:
        raise ValueError(f"analysis must be one of {ANALYSES}, got {analysis!r}")
    # "the bound exceeds target" is "the analysis rejects target": one test per fraction instead of a bisection
    mu_target = 1.0 / calibrate.gaussian_multiplier_exact(target, delta, 1).value if analysis == "gdp" else None
    each = level / len(fractions)

    def rejects(m, r, v):
        if analysis == "steinke":
            return one_run.p_value(m, r, v, target, delta) <= each
        if analysis == "fdp":
            return not fdp_one_run.consistent("eps_delta", target, m, r, v, each, delta)
        return not fdp_one_run.consistent("gdp", mu_target, m, r, v, each)

    def ok(m):
        for f in fractions:
            r, ev, sd = expected_guesses(mu, m, f)
            if rejects(m, r, int(min(r, max(0, math.floor(ev - sds * sd))))):
                return True
        return False
    return smallest_count(ok, 10, MAX_CANARIES, rtol)


def smallest_count(ok, start: int, cap: int, rtol: float) -> float:
    """The smallest count m (to `rtol`) with ok(m), for ok monotone in m: quadrupling from `start`, then bisecting on
    a log scale; inf when it would take more than `cap`."""
    lo, hi = start, start
    while not ok(hi):
        lo, hi = hi, hi * 4
        if hi > cap:
            return math.inf
    while hi > lo * (1 + rtol) and hi - lo > 1:
        mid = min(max(int(math.sqrt(lo * hi)), lo + 1), hi - 1)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return float(hi)


def gdp_mu(noise_multiplier: float, steps: int) -> float:
    """mu of `steps` composed Gaussian releases with this multiplier (sigma / the canary pair's gap)."""
    return math.sqrt(int(steps)) / float(noise_multiplier) if noise_multiplier > 0 else math.inf



