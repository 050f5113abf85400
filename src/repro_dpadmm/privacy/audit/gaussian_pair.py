"""The Gaussian-pair reading of one-run canary scores (Agrawal, Wei, Singh, Magdon-Ismail and Zikas, "Let's Ask
Gauss: Improved One-Run Privacy Auditing", arXiv:2606.12733, 2026): instead of thresholding the scores into guesses
(`one_run`, `fdp_one_run`), model the scores of the present canaries (S_i = +1) and of the absent ones (S_i = -1)
as a pair of one-dimensional Gaussians and read the privacy of the pair from its hockey-stick divergence.

What carries over from the paper. Its setting is white-box DP-SGD, where a canary's score is a sum over the T steps
of the noisy update projected on the canary: a normalised sum whose distribution is Gaussian (exactly, when the
projected noise is Gaussian and the rest of the update is subtracted, as in this package's white-box rows; in the
limit, by their central limit argument, otherwise). Two Gaussians of equal variance sigma^2 whose means are Delta
apart are exactly mu-GDP with mu = Delta / sigma (Dong, Roth and Su 2019), so their hockey-stick divergence at e^eps
is the analytic Gaussian curve delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (`fdp_one_run.gdp_epsilon`).
A score is a post-processing of the run, so a mechanism that is mu-GDP for each canary gives a score pair no more
distinguishable than mu-GDP: an audited mu above the claim's contradicts it.

What is ours (the paper is silent or leaves it open):

* the estimate and its uncertainty: mu_hat = (mean_+ - mean_-) / s_pooled; under the equal-variance Gaussian model
  the two-sample t statistic t = mu_hat / sqrt(1/n_+ + 1/n_-) is noncentral t with n_+ + n_- - 2 degrees of freedom
  and noncentrality mu / sqrt(1/n_+ + 1/n_-), so the one-sided lower confidence bound on mu is exact under the model
  (`mu_bounds`, scipy's `nct`, solved by a vectorised bisection over any number of rows or seeds at once);
* the test of the model itself (`audit`): D'Agostino and Pearson's normality test of each group's scores and
  Levene's (Brown-Forsythe) test of equal variances, combined by Bonferroni into one p-value `fit_p`. A reading
  whose fit the test rejects at the audit's level rests on a model the scores contradict: the caller does not count
  its flag (`beyond_audit_run`).
* the canaries enter as independent draws of the pair. In a one-run audit they share the run; for the white-box rows
  the projected noise of different canaries is independent (disjoint coordinates or agents), for the record-level
  rows it is not exactly, which the fit test and the simulations in tests/privacy/audit/test_gaussian_pair.py bound.

`expected_mu_lo` and `canaries_needed` are the power calculation of this reading (`power` has the thresholded ones):
with m canaries split evenly and true mu, t is noncentral t; the bound expected at `sds` standard deviations of t
below its mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .fdp_one_run import gdp_epsilon
from .power import smallest_count

MAX_CANARIES = 10 ** 9


def _nc_lower(t: np.ndarray, df: np.ndarray, level: float, iters: int = 80) -> np.ndarray:
    """The noncentrality nc with P[T >= t | nc] = level (T noncentral t, df): the one-sided lower confidence bound on
    nc at confidence 1 - level. Vectorised bisection (sf increases with nc)."""
    t, df = np.broadcast_arrays(np.asarray(t, float), np.asarray(df, float))
    z = stats.norm.isf(level)
    # bracket: nc within t -/+ (z + 10) sd of the normal approximation of T
    sd = np.sqrt(1.0 + t * t / (2.0 * df))
    lo, hi = t - (z + 10.0) * sd, t + 10.0 * sd
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        up = stats.nct.sf(t, df, mid) > level          # mid already makes t likely: the bound is below mid
        lo, hi = np.where(up, lo, mid), np.where(up, mid, hi)
    return 0.5 * (lo + hi)


def mu_bounds(scores: np.ndarray, S: np.ndarray, level: float) -> dict:
    """The Gaussian fit of present (S = +1) and absent (S = -1) canaries' scores along the last axis, any leading
    axes (rows, seeds) at once: {"mu_hat", "mu_lo" (>= 0, confidence 1 - level), "se" (of mu_hat, delta method),
    "t", "n_plus", "n_minus", "mean_plus", "mean_minus", "sd_plus", "sd_minus", "sd_pooled"} as arrays."""
    scores = np.asarray(scores, float)
    S = np.asarray(S)
    if scores.shape != S.shape or not np.all(np.isin(S, (-1, 1))):
        raise ValueError("scores and S must have the same shape and S must hold +1 / -1")
    if not np.all(np.isfinite(scores)):
        raise ValueError("every score must be finite")
    if not 0 < level < 1:
        raise ValueError(f"level (1 - confidence) must lie in (0, 1), got {level!r}")
    plus = S > 0
    n1, n0 = plus.sum(-1), (~plus).sum(-1)
    if np.any(n1 < 2) or np.any(n0 < 2):
        raise ValueError("need at least two present and two absent canaries")
    m1 = np.where(plus, scores, 0.0).sum(-1) / n1
    m0 = np.where(plus, 0.0, scores).sum(-1) / n0
    ss1 = np.where(plus, (scores - m1[..., None]) ** 2, 0.0).sum(-1)
    ss0 = np.where(plus, 0.0, (scores - m0[..., None]) ** 2).sum(-1)
    df = n1 + n0 - 2
    sp = np.sqrt((ss1 + ss0) / df)
    scale = np.sqrt(1.0 / n1 + 1.0 / n0)
    mu_hat = (m1 - m0) / sp
    t = mu_hat / scale
    mu_lo = np.maximum(0.0, _nc_lower(t, df, level) * scale)
    se = np.sqrt(scale ** 2 + mu_hat ** 2 / (2.0 * df))
    return {"mu_hat": mu_hat, "mu_lo": mu_lo, "se": se, "t": t, "n_plus": n1, "n_minus": n0, "mean_plus": m1,
            "mean_minus": m0, "sd_plus": np.sqrt(ss1 / (n1 - 1)), "sd_minus": np.sqrt(ss0 / (n0 - 1)),
            "sd_pooled": sp}


@dataclass(frozen=True)
class GaussPairResult:
    mu_hat: float          # the fitted pair's mu (point estimate)
    se: float              # its standard error
    mu_lo: float           # one-sided lower confidence bound on mu (confidence 1 - level), exact under the model
    eps_hat: float         # epsilon at delta of mu_hat-GDP
    eps_lo: float          # epsilon at delta of mu_lo-GDP: exceeds a claim's tight total iff mu_lo exceeds its mu
    fit_p: float           # p-value of the Gaussian equal-variance model (normality of each group, equal variances)
    normal_p_plus: float
    normal_p_minus: float
    equal_var_p: float
    sd_ratio: float        # sd of present / sd of absent scores
    canaries: int
    delta: float
    level: float


def audit(scores: np.ndarray, S: np.ndarray, delta: float, level: float) -> GaussPairResult:
    """The Gaussian-pair reading of one row's canaries (scores: higher, more likely present), at confidence
    1 - level, with the test of its model."""
    scores, S = np.asarray(scores, float).ravel(), np.asarray(S).ravel()
    b = mu_bounds(scores, S, level)
    plus, minus = scores[S > 0], scores[S < 0]
    # scipy's tests (D'Agostino-Pearson needs >= 8 per group; below that the model is not testable: p = 1, and the
    # row's table says so through `canaries`)
    p_plus = float(stats.normaltest(plus).pvalue) if plus.size >= 8 else 1.0
    p_minus = float(stats.normaltest(minus).pvalue) if minus.size >= 8 else 1.0
    p_var = float(stats.levene(plus, minus, center="median").pvalue)
    fit_p = min(1.0, 3.0 * min(p_plus, p_minus, p_var))
    mu_hat, mu_lo = float(b["mu_hat"]), float(b["mu_lo"])
    return GaussPairResult(mu_hat=mu_hat, se=float(b["se"]), mu_lo=mu_lo,
                           eps_hat=gdp_epsilon(max(mu_hat, 0.0), delta), eps_lo=gdp_epsilon(mu_lo, delta),
                           fit_p=fit_p, normal_p_plus=p_plus, normal_p_minus=p_minus, equal_var_p=p_var,
                           sd_ratio=float(b["sd_plus"] / b["sd_minus"]), canaries=int(scores.size),
                           delta=float(delta), level=float(level))


# ------------------------------------------------------------------------------------------------- power
def gdp_mu_of_epsilon(eps: float, delta: float) -> float:
    """The mu whose mu-GDP has exactly `eps` at `delta` (the inverse of `fdp_one_run.gdp_epsilon`; 0 for eps <= 0)."""
    from scipy.optimize import brentq

    if eps <= 0:
        return 0.0
    hi = 1.0
    while gdp_epsilon(hi, delta) < eps:
        hi *= 2.0
    return float(brentq(lambda mu: gdp_epsilon(mu, delta) - eps, 1e-12, hi, xtol=1e-12, rtol=1e-10))


def expected_mu_lo(mu: float, m: float, level: float, sds: float = 0.0) -> float:
    """The lower bound this reading gives with m canaries (half present) of true mu, when t falls `sds` standard
    deviations below its mean (0: the median run; 2: reached in about 98% of runs)."""
    m = float(m)
    n = m / 2.0
    scale = math.sqrt(2.0 / n)
    df = m - 2.0
    nc = mu / scale
    t = nc - sds * math.sqrt(1.0 + nc * nc / (2.0 * df))
    return max(0.0, float(_nc_lower(np.array(t), np.array(df), level)) * scale)


def expected_eps(mu: float, m: float, delta: float, level: float, sds: float = 0.0) -> float:
    return gdp_epsilon(expected_mu_lo(mu, m, level, sds), delta)


def canaries_needed(mu: float, target_mu: float, level: float, sds: float = 0.0, rtol: float = 0.02) -> float:
    """The smallest m (to `rtol`) whose expected lower bound on mu exceeds `target_mu`; inf if target_mu >= mu (no
    number of canaries shows more than the canaries' own mu) or if it needs more than 10^9."""
    if not target_mu < mu:
        return math.inf

    return smallest_count(lambda m: expected_mu_lo(mu, m, level, sds) > target_mu, 8, MAX_CANARIES, rtol)
