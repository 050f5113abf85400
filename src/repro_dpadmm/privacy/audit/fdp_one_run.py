"""The f-DP one-run analysis of Mahloujifar, Melis and Chaudhuri, "Auditing f-Differential Privacy in One Run"
(arXiv:2410.22235, 2024): from the same guesses as `one_run` (m canaries, r guesses, v of them correct), the
largest privacy parameter of a trade-off family that the observation rejects.

What carries over from the paper. Its setting is exactly `one_run`'s (Steinke, Nasr and Jagielski 2023): canaries
included or not with probability 1/2 independently, one run, guesses on the r canaries the adversary is most sure
of. Its theorem bounds, for a mechanism that is f-DP with respect to every canary, the probability of v or more
correct guesses by a recursion over the guesses that uses f itself (through its "inverse blow-up",
x -> f(1 - x)), instead of Steinke et al.'s reduction to (epsilon, delta)-DP and a binomial tail. So:

* `gdp_lower_bound`: the largest mu such that "mu-GDP" (Dong, Roth and Su 2019: the trade-off of a Gaussian
  mechanism whose neighbours are mu noise standard deviations apart) is rejected at `level`. A T-step Gaussian
  mechanism with multiplier z is exactly sqrt(T)/z-GDP, so an audited mu above sqrt(T)/z contradicts the claimed
  noise; its epsilon at delta (`gdp_epsilon`) is then above the tight total of that noise. This is the paper's
  headline use, and the one that does not lose power to the delta term: Steinke et al.'s bound pays 2 m delta,
  which caps it for m ~ 1/delta canaries.
* `epsilon_lower_bound`: the same recursion with the trade-off of (epsilon, delta)-DP,
  f(x) = max(0, 1 - delta - e^eps x, e^-eps (1 - delta - x)): a bound on epsilon at delta that needs no
  assumption on the shape of the mechanism's trade-off (comparable to `one_run.epsilon_lower_bound`, and never
  weaker than it in the paper's experiments).

The recursion (their Algorithm for the capped-guess case, as in the authors' public implementation): with
tau = level r / m, h_v = tau (r - v) / r, r_v = tau v / r and for i = v-1 .. 0
h_i = max(h_{i+1}, f(1 - r_{i+1})), r_i = r_{i+1} + i / (r - i) (h_i - h_{i+1}); the f-DP hypothesis is
consistent with the observation iff r_0 + h_0 <= r / m. Here the largest rejected parameter is found by bisection
(the set of consistent parameters is an up-set: a larger mu or epsilon permits more), and 0 is returned when even
the non-private end is consistent. The loop runs v times per test, so it is compiled (numba; the normal quantile is scipy's
ndtri through its Cython export, the normal cdf math.erfc).

`audit` tries the same guess fractions as `one_run.audit` with the same Bonferroni split, so both analyses read the
same guesses at the same confidence.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numba
import numpy as np
from numba.extending import get_cython_function_address

from .. import accounting
from .one_run import FRACTIONS, guess_counts

_c_double_fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)
_ndtri = _c_double_fn(get_cython_function_address("scipy.special.cython_special", "ndtri"))

GDP, EPS_DELTA = 0, 1
MU_MAX = 40.0        # mu-GDP with mu = 40: every test separates the pair with error < 1e-80 (no bound exceeds it)
EPS_MAX = 60.0


@numba.njit(cache=False)   # ctypes pointers cannot be cached on disk; compiling takes about a second
def _inverse_blow_up(family: int, param: float, delta: float, x: float) -> float:
    """f(1 - x) for the trade-off f of the family at `param` (GDP: mu; EPS_DELTA: epsilon at delta)."""
    if family == GDP:
        if x <= 0.0:
            return 0.0
        if x >= 1.0:
            return 1.0
        return 0.5 * math.erfc((param - _ndtri(x)) / math.sqrt(2.0))   # Phi(Phi^-1(x) - mu)
    e = math.exp(param)
    return max(0.0, 1.0 - delta - e * (1.0 - x), (x - delta) / e)


@numba.njit(cache=False)   # ctypes pointers cannot be cached on disk; compiling takes about a second
def _consistent(family: int, param: float, delta: float, m: int, r: int, v: int, level: float) -> bool:
    tau = level * r / m
    h = tau * (r - v) / r
    rr = tau * v / r
    for i in range(v - 1, -1, -1):
        hn = max(h, _inverse_blow_up(family, param, delta, rr))
        rr = rr + (i / (r - i)) * (hn - h)
        h = hn
    return rr + h <= r / m


def _check(m: int, r: int, v: int, level: float) -> None:
    for name, x in (("m", m), ("r", r), ("v", v)):
        if int(x) != x or x < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {x!r}")
    if not 0 <= v <= r <= m or m < 1 or r < 1:
        raise ValueError(f"need 0 <= v <= r <= m and r >= 1 (v correct of r guesses on m canaries), got "
                         f"v={v}, r={r}, m={m}")
    if not 0 < level < 1:
        raise ValueError(f"level (1 - confidence) must lie in (0, 1), got {level!r}")


def consistent(family: str, param: float, m: int, r: int, v: int, level: float, delta: float = 0.0) -> bool:
    """Whether "f-DP with f of `family` ('gdp': mu-GDP; 'eps_delta': (epsilon, delta)-DP) at `param`" is consistent
    with v correct of r guesses on m canaries at `level` (True: not rejected)."""
    _check(m, r, v, level)
    fam = {"gdp": GDP, "eps_delta": EPS_DELTA}[family]
    return bool(_consistent(fam, float(param), float(delta), int(m), int(r), int(v), float(level)))


def _largest_rejected(family: int, delta: float, m: int, r: int, v: int, level: float, hi: float,
                      tol: float) -> float:
    if _consistent(family, 0.0, delta, m, r, v, level):
        return 0.0
    if not _consistent(family, hi, delta, m, r, v, level):
        return hi
    lo = 0.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _consistent(family, mid, delta, m, r, v, level) else (mid, hi)
    return lo


def gdp_lower_bound(m: int, r: int, v: int, level: float, *, tol: float = 1e-5) -> float:
    """The largest mu whose mu-GDP the observation rejects at `level` (0: none)."""
    _check(m, r, v, level)
    return _largest_rejected(GDP, 0.0, int(m), int(r), int(v), float(level), MU_MAX, tol)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, level: float, *, tol: float = 1e-5) -> float:
    """The largest epsilon whose (epsilon, delta)-DP the observation rejects at `level` (0: none)."""
    _check(m, r, v, level)
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
    return _largest_rejected(EPS_DELTA, float(delta), int(m), int(r), int(v), float(level), EPS_MAX, tol)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Epsilon at delta of mu-GDP (the analytic Gaussian curve; 0 for mu = 0)."""
    return 0.0 if mu <= 0 else accounting.analytic_gaussian_epsilon(1.0 / float(mu), delta)


@dataclass(frozen=True)
class FdpResult:
    mu_lo: float           # audited mu (GDP family), confidence 1 - level (Bonferroni over the fractions)
    eps_lo_gdp: float      # its epsilon at delta: exceeds a claim's tight total iff mu_lo exceeds the claimed mu
    eps_lo: float          # audited epsilon at delta, (epsilon, delta) family (no assumption on the trade-off)
    fraction_gdp: float
    fraction: float
    guesses: int           # r and v of the fraction that gave eps_lo
    correct: int
    canaries: int
    delta: float
    level: float


def audit(scores: np.ndarray, S: np.ndarray, delta: float, level: float,
          fractions: tuple = FRACTIONS) -> FdpResult:
    """The f-DP one-run audit of canaries with signs S (+1 / -1) and scores (higher: more likely +1), on the guesses
    `one_run.audit` makes (k_+ = k_- = fraction m / 2), each fraction at level / len(fractions)."""
    m, counts = guess_counts(scores, S, fractions)
    each = level / len(fractions)
    best_mu, best_eps = None, None
    for f, r, v in counts:
        mu = gdp_lower_bound(m, r, v, each)
        eps = epsilon_lower_bound(m, r, v, delta, each)
        if best_mu is None or mu > best_mu[0]:
            best_mu = (mu, f)
        if best_eps is None or eps > best_eps[0]:
            best_eps = (eps, f, r, v)
    return FdpResult(mu_lo=best_mu[0], eps_lo_gdp=gdp_epsilon(best_mu[0], delta), eps_lo=best_eps[0],
                     fraction_gdp=best_mu[1], fraction=best_eps[1], guesses=best_eps[2], correct=best_eps[3],
                     canaries=m, delta=float(delta), level=float(level))
