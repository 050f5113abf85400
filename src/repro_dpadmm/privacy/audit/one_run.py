"""The one-run privacy audit of Steinke, Nasr and Jagielski, "Privacy Auditing with One (1) Training Run" (NeurIPS
2023, arXiv:2305.08846): m canaries, each present (S_i = +1) or absent / replaced (S_i = -1) with probability 1/2
independently, ONE run of the mechanism, a score per canary, guesses "+1" for the k_+ highest and "-1" for the k_-
lowest scores (abstain on the rest), and a lower bound on epsilon from the number of correct guesses.

The bound (arXiv:2305.08846v1: the main result, Theorem 3.1, in the form of Corollary 5.4, computed as their
Appendix D does; tests/privacy/audit/test_one_run.py pins Appendix D's worked example and one run of Section 7).
If the mechanism is (epsilon, delta)-DP in each coordinate of S, then for r guesses of which W are correct,

    P[W >= v] <= beta(v) + 2 m delta * alpha(v),    beta(v) = P[Binomial(r, q) >= v],   q = e^eps / (1 + e^eps),
    alpha(v) = max_{i = 1..v} P[v - i <= Binomial(r, q) < v] / i.

So observing v correct guesses rejects "(epsilon, delta)-DP" at level a when that p-value is <= a; the audited lower
bound is the largest such epsilon (bisection; the p-value increases with epsilon). Several runs on disjoint canaries
pool: the runs together are one mechanism of all their canaries, each coordinate still (epsilon, delta)-DP.

Why a small function instead of a package. jax-privacy's ``auditing`` module has this bound (and the f-DP one of
Mahloujifar et al. 2024) and itself needs only numpy / scipy / dp-accounting, but importing it imports the jax-privacy
package, which installs JAX, jaxlib, optax and chex (hundreds of MB) for a 20-line tail bound; privacy-estimates
(already a dependency, used by `privacy.audit.two_datasets`) has only the two-dataset Clopper-Pearson bounds, not
the one-run analysis. The function below is checked against a direct binomial computation and against the values
the paper prints (tests/privacy/audit/test_one_run.py).

Choosing k. The number of guesses must not be picked by looking at which choice gives the best bound on the same
canaries. `audit` tries a fixed grid of guess fractions and gives each the level alpha / len(grid) (Bonferroni), so
the largest of the bounds holds with confidence 1 - alpha.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

# Guess fractions tried (k_+ = k_- = fraction * m / 2, at least one each): the whole set down to the extreme 1%.
FRACTIONS = (1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01)


def _check(m: int, r: int, v: int, delta: float) -> None:
    for name, x in (("m", m), ("r", r), ("v", v)):
        if int(x) != x or x < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {x!r}")
    if not 0 <= v <= r <= m or m < 1:
        raise ValueError(f"need 0 <= v <= r <= m and m >= 1 (v correct of r guesses on m canaries), got "
                         f"v={v}, r={r}, m={m}")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P[W >= v] bounded under (epsilon, delta)-DP (Theorem 3.1 / Corollary 5.4; Appendix D's p-value)."""
    _check(m, r, v, delta)
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    q = 1.0 / (1.0 + np.exp(-float(epsilon)))
    beta = float(binom.sf(v - 1, r, q))
    if delta == 0 or v == 0:
        return min(beta, 1.0)
    return min(beta + 2.0 * m * delta * _alpha(r, v, q), 1.0)


def _alpha(r: int, v: int, q: float, first: int = 256) -> float:
    """max over i = 1..v of P[v - i <= Binomial(r, q) < v] / i, summed from i = 1 upwards in chunks of doubling
    length. The sum is at most 1, so once 1/i falls below the largest ratio so far no later i can exceed it (the
    1e-9 covers the sum's round-off): the pmf is evaluated near v only, where the tail the ratio reads lies (a white-box
    audit's v of 90,000 needed all 90,000 terms per bisection step). The running sum continues the same sequence of
    additions, so the value equals the sum over all v terms bit for bit (tests/privacy)."""
    best, below, i0, size = 0.0, 0.0, 1, first
    while i0 <= v:
        i = np.arange(i0, min(v, i0 + size - 1) + 1)
        sums = np.cumsum(np.concatenate([[below], binom.pmf(v - i, r, q)]))[1:]   # P[v - i <= Binomial < v]
        best = max(best, float(np.max(sums / i)))
        below, i0, size = float(sums[-1]), int(i[-1]) + 1, 2 * size
        if (1.0 + 1e-9) / i0 < best:
            break
    return best


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, level: float, *, tol: float = 1e-6) -> float:
    """The largest epsilon whose (epsilon, delta)-DP claim v correct of r guesses rejects at `level` (0 if none)."""
    if not 0 < level < 1:
        raise ValueError(f"level (1 - confidence) must lie in (0, 1), got {level!r}")
    if p_value(m, r, v, 0.0, delta) > level:
        return 0.0
    lo, hi = 0.0, 1.0
    while p_value(m, r, v, hi, delta) <= level:
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:
            raise ValueError("the bound diverged: check m, r, v")
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if p_value(m, r, v, mid, delta) <= level else (lo, mid)
    return lo


def guesses(scores: np.ndarray, k_plus: int, k_minus: int) -> np.ndarray:
    """+1 for the k_plus highest scores, -1 for the k_minus lowest, 0 (abstain) elsewhere (ties broken by index)."""
    scores = np.asarray(scores, float)
    if k_plus + k_minus > scores.size:
        raise ValueError(f"k_plus + k_minus = {k_plus + k_minus} exceeds the {scores.size} canaries")
    order = np.argsort(scores, kind="stable")
    g = np.zeros(scores.size, dtype=int)
    if k_minus:
        g[order[:k_minus]] = -1
    if k_plus:
        g[order[scores.size - k_plus:]] = 1
    return g


@dataclass(frozen=True)
class OneRunResult:
    eps_lo: float          # the audited lower bound (confidence 1 - level, Bonferroni over the fractions)
    fraction: float        # the guess fraction that gave it
    guesses: int           # r
    correct: int           # v
    canaries: int          # m
    delta: float
    level: float
    cap: float             # the largest bound this m and the grid can give (every guess correct at every fraction)


def guess_counts(scores: np.ndarray, S: np.ndarray, fractions: tuple = FRACTIONS) -> tuple[int, list]:
    """The guesses of canaries with true signs S (+1 / -1) and scores (higher: more likely +1) at each fraction f of
    the m canaries (k_+ = k_- = f m / 2): (m, [(f, r guesses, v correct)]), after checking the inputs. Every one-run
    analysis (this module's bound, `fdp_one_run`) reads these same guesses."""
    scores, S = np.asarray(scores, float).ravel(), np.asarray(S).ravel()
    if scores.shape != S.shape or not np.all(np.isin(S, (-1, 1))):
        raise ValueError("scores and S must have the same length and S must hold +1 / -1")
    if not np.all(np.isfinite(scores)):
        raise ValueError("every score must be finite")
    m = scores.size
    out = []
    for f in fractions:
        k = max(1, int(round(f * m / 2)))
        g = guesses(scores, k, k)
        out.append((f, int(np.count_nonzero(g)), int(np.count_nonzero(g * S == 1))))
    return m, out


def audit(scores: np.ndarray, S: np.ndarray, delta: float, level: float,
          fractions: tuple = FRACTIONS) -> OneRunResult:
    """One-run audit of canaries with true signs S (+1 / -1) and scores (higher: more likely +1)."""
    m, counts = guess_counts(scores, S, fractions)
    each = level / len(fractions)
    best = None
    cap = 0.0
    for f, r, v in counts:
        eps = epsilon_lower_bound(m, r, v, delta, each)
        cap = max(cap, epsilon_lower_bound(m, r, r, delta, each))
        if best is None or eps > best[0]:
            best = (eps, f, r, v)
    return OneRunResult(eps_lo=best[0], fraction=best[1], guesses=best[2], correct=best[3], canaries=m,
                        delta=float(delta), level=float(level), cap=cap)
