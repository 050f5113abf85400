"""ZKL's pure-DP bounds on the total privacy loss of the whole network over all iterations.

* ICML 2018, Theorem 4.1, eq. (26): P(t) = max_i sum_{r=1}^t C (1.4 c_1 + alpha_i(r)) / (eta_i(r) V_i B_i) for
  private M-ADMM (penalty perturbation) and DVP (eta = theta).
* Allerton 2018, Theorem IV.1, eq. (30): P(t) = max_i sum_{k=1}^{ceil(t/2)} (2C/B_i) (1.4 c_1 / (rho/N + 2 eta V_i)
  + alpha_i(k)) for private R-ADMM; only odd iterations count (even ones are post-processing, Lemma IV.1). The
  summation limit is unreadable in the OCR; ceil(t/2) is docs/choices.md#zkl-radmm-bound [D].
* `icml_per_iteration`, `allerton_per_release`: the summands, i.e. each node's pure-DP budget per (private)
  iteration, which an optimal composition theorem can compose more tightly than the sum (beyond/frontier).
* `match_alpha`: the bisection of docs/choices.md#zkl-radmm-bound that gives DVP and PP the same final bound as R-ADMM.
* `icml_total`, `allerton_total`: P(T), registered as the paper bounds 'zhang2018.icml_P' and 'zhang2018.allerton_P'
  that a private run's recorded Spend names (privacy.spend.totals evaluates them from the record); `paper_total`
  and `P_curve`: P(T) and the whole curve P(t) of such a record.

1.4 comes from -ln(1 - x) <= 1.4 x on [0, 0.5]; c_1 = 1/4 for the logistic loss.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...solvers import require_converged
from ..spend import paper_bound, totals

C1 = 0.25


def _grid(x, rows: int, N: int, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        x = np.full((rows, N), float(x))
    elif x.ndim == 1:
        x = np.repeat(x[:, None], N, axis=1)
    if x.shape != (rows, N):
        raise ValueError(f"{name} must broadcast to {(rows, N)}, got {x.shape}")
    return x


def _check(C, B, V):
    B = np.asarray(B, dtype=float)
    V = np.asarray(V, dtype=float)
    if B.shape != V.shape or B.ndim != 1:
        raise ValueError(f"B and V must be per-node vectors of the same length, got {B.shape} and {V.shape}")
    if np.any(V < 1):
        raise ValueError("every node needs at least one neighbour (connected graph)")
    if not C > 0 or np.any(C > B):
        raise ValueError(f"need 0 < C <= B_i for every node; got C = {C}, min B_i = {B.min()}")
    return B, V


def icml_per_iteration(C: float, B, V, eta, alpha, c1: float = C1) -> np.ndarray:
    """The summand of ICML Thm 4.1, C (1.4 c_1 + alpha_i(t)) / (eta_i(t) V_i B_i): node i's pure-DP budget at
    iteration t (the proof bounds each iteration's density ratio by it). Shape (T, N)."""
    B, V = _check(C, B, V)
    T = np.asarray(eta).shape[0] if np.ndim(eta) else np.asarray(alpha).shape[0]
    eta = _grid(eta, T, B.size, "eta")
    alpha = _grid(alpha, T, B.size, "alpha")
    if np.any(eta <= 0) or np.any(alpha < 0):
        raise ValueError("eta must be > 0 and alpha >= 0")
    return C * (1.4 * c1 + alpha) / (eta * V * B)


def icml_P(C: float, B, V, eta, alpha, c1: float = C1) -> np.ndarray:
    """P(t), t = 0..T, of ICML Thm 4.1 / §5 for schedules eta_i(t), alpha_i(t) of shape (T, N) (or (T,))."""
    per_iter = icml_per_iteration(C, B, V, eta, alpha, c1)  # (T, N)
    return np.concatenate([[0.0], np.cumsum(per_iter, axis=0).max(axis=1)])


def allerton_per_release(C: float, B, V, rho: float, eta, alpha, T: int, c1: float = C1) -> np.ndarray:
    """The summand of Allerton Thm IV.1, (2C/B_i) (1.4 c_1 / (rho/N + 2 eta V_i) + alpha_i(k)): node i's pure-DP
    budget at the k-th private (odd) iteration, k = 1..ceil(T/2). Shape (K, N)."""
    B, V = _check(C, B, V)
    N, K = B.size, -(-T // 2)
    eta = _grid(eta, K, N, "eta")
    alpha = _grid(alpha, K, N, "alpha")
    if np.any(eta <= 0) or np.any(alpha < 0) or not rho > 0:
        raise ValueError("eta and rho must be > 0 and alpha >= 0")
    return (2.0 * C / B) * (1.4 * c1 / (rho / N + 2.0 * eta * V) + alpha)


def allerton_P(C: float, B, V, rho: float, eta, alpha, T: int, c1: float = C1) -> np.ndarray:
    """P(t), t = 0..T, of Allerton Thm IV.1: ceil(t/2) private (odd) releases; alpha_i(k) and the odd-step penalty
    eta(2k-1) of shape (K, N) (or (K,), or scalars), K = ceil(T/2)."""
    per_release = allerton_per_release(C, B, V, rho, eta, alpha, T, c1)  # (K, N)
    N = per_release.shape[1]
    cum = np.concatenate([np.zeros((1, N)), np.cumsum(per_release, axis=0)])  # k = 0..K
    k_of_t = -(-np.arange(T + 1) // 2)
    return cum[k_of_t].max(axis=1)


def match_alpha(final_P: Callable[[float], float], target: float, *, rtol: float = 1e-9,
                max_iter: int = 200) -> dict:
    """The alpha with final_P(alpha) = target, by bisection (final_P increases with alpha).

    Returns {alpha, P, reached, floor, reason}. If even alpha -> 0 (infinite noise) gives a bound above the target,
    no alpha can match: reached is False, alpha is None, and `reason` says why (docs/choices.md#zkl-radmm-bound).
    """
    if not target > 0:
        raise ValueError(f"the target privacy bound must be > 0, got {target}")
    floor = float(final_P(0.0))
    if floor >= target:
        return {"alpha": None, "P": floor, "reached": False, "floor": floor,
                "reason": f"the alpha-free part of the bound ({floor:.4g}) already reaches the target ({target:.4g})"}
    lo, hi = 0.0, 1.0
    while final_P(hi) < target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e12:
            return {"alpha": None, "P": float(final_P(hi)), "reached": False, "floor": floor,
                    "reason": "the bound does not reach the target for any alpha <= 1e12"}
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if final_P(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= rtol * hi:
            break
    require_converged("matching alpha to the target privacy bound (bisection)", max_iter, (hi - lo) / hi, rtol)
    alpha = 0.5 * (lo + hi)
    return {"alpha": alpha, "P": float(final_P(alpha)), "reached": True, "floor": floor, "reason": ""}


@paper_bound("zhang2018.icml_P")
def icml_total(C: float, B, V, eta, alpha, c1: float = C1) -> float:
    """The paper's total privacy loss of private M-ADMM / DVP over the whole run: P(T) of ICML Thm 4.1 (26)."""
    return float(icml_P(C, B, V, eta, alpha, c1)[-1])


@paper_bound("zhang2018.allerton_P")
def allerton_total(C: float, B, V, rho: float, eta, alpha, T: int, c1: float = C1) -> float:
    """The paper's total privacy loss of private R-ADMM over 2K = T iterations: P(T) of Allerton Thm IV.1 (30)."""
    return float(allerton_P(C, B, V, rho, eta, alpha, T, c1)[-1])


_CURVES = {"zhang2018.icml_P": icml_P, "zhang2018.allerton_P": allerton_P}


def P_curve(spend) -> np.ndarray:
    """P(t), t = 0..T, of a private ZKL run from the Spend it recorded: the curve of the bound the record names
    ('zhang2018.icml_P' or 'zhang2018.allerton_P'), over the schedules it holds; its last value is the paper total."""
    if spend.bound not in _CURVES:
        raise ValueError(f"not a ZKL privacy record: bound {spend.bound!r}; expected one of {sorted(_CURVES)}")
    return _CURVES[spend.bound](**spend.bound_args)


# ZKL's bounds are pure DP: the paper's total does not depend on delta. totals() takes one for its (eps, delta)
# accountants, which paper_total does not ask for (pld=False).
_UNUSED_DELTA = 1e-5


def paper_total(spend) -> float:
    """P(T) of a private ZKL run from the Spend it recorded, through privacy.spend.totals (the paper bound the
    record names, over the schedules it holds)."""
    return totals(spend, _UNUSED_DELTA, pld=False)["paper_eps"]
