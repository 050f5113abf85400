"""Privacy bounds of Hu et al., "Learning Privately over Distributed Features: An ADMM Sharing Approach".

Lemma 1 (sensitivity bound C), Theorem 1 (Gaussian calibration per iteration) and Corollary 1 (advanced composition
over T epochs), exactly as the paper states them (docs/choices.md#hu-privacy). A run records each party's release as a `Spend`
(`spend`: T Gaussian steps with multiplier sigma_m / C_m), naming Corollary 1 (`corollary1_total`, the paper bound
"hu2020.corollary1") as the bound that claims it; `tight_totals` gives dp-accounting's tight composition of the same
record, so the two can be shown side by side.

The paper's guarantee is *feature-level*: neighbouring datasets differ in one feature column of one party (a
replace-one relation on columns, recorded as "replace-one").
"""

from __future__ import annotations

import numpy as np

from ..mechanisms import check_epsilon_delta
from ..spend import REPLACE_ONE, Spend, gaussian_steps, paper_bound, totals


def sensitivity_bound(lam: float, c1: float, b1: float, M: int, rho: float, d_m) -> np.ndarray | float:
    """Lemma 1: C = 3 [lambda c_1 + (1 + M rho) b_1] / (d_m rho), per party (d_m may be an array).

    [!] docs/choices.md#hu-paper-inconsistencies: the proof needs (D_m^T D_m)^{-1} to exist and uses ||D_m (D_m^T D_m)^{-1}|| <= 1/d_m without
    justification, so the bound shrinks as d_m grows; b_1 is a bound on ||x||, ||y||, ||z|| the paper leaves open.
    """
    if rho <= 0:
        raise ValueError(f"rho must be > 0, got {rho}")
    if M < 1:
        raise ValueError(f"the number of parties M must be >= 1, got {M}")
    d = np.asarray(d_m, dtype=float)
    if np.any(d < 1):
        raise ValueError(f"every party needs d_m >= 1 features, got {d_m}")
    if lam < 0 or c1 < 0 or b1 < 0:
        raise ValueError(f"lambda, c_1 and b_1 must be >= 0, got {lam}, {c1}, {b1}")
    C = 3.0 * (lam * c1 + (1.0 + M * rho) * b1) / (d * rho)
    return C if C.ndim else float(C)


def theorem1_sigma(C, epsilon: float, delta: float, *, strict: bool = True):
    """Theorem 1: sigma_{m,t+1} = sqrt(2 ln(1.25/delta)) C / epsilon gives (epsilon, delta)-DP per iteration.

    The theorem is stated for epsilon in (0, 1]; `strict=False` allows larger epsilon (the authors' own
    (epsilon, delta) runs use epsilon up to 100), where the formula is applied outside its proven range.
    """
    check_epsilon_delta(epsilon, delta, max_epsilon=1.0 if strict else None)
    return np.asarray(C, dtype=float) * np.sqrt(2.0 * np.log(1.25 / delta)) / epsilon


def epsilon_for_sigma(C, sigma, delta: float):
    """Inverse of Theorem 1: the per-iteration epsilon a noise level sigma buys (docs/choices.md#hu-privacy; indicative only)."""
    sigma = np.asarray(sigma, dtype=float)
    if np.any(sigma <= 0):
        raise ValueError("sigma must be > 0 to attach an epsilon to it")
    check_epsilon_delta(1.0, delta)
    return np.asarray(C, dtype=float) * np.sqrt(2.0 * np.log(1.25 / delta)) / sigma


def corollary1_epsilon(epsilon, T, delta_prime: float):
    """Corollary 1, eq. (10): eps' = sqrt(2 T ln(1/delta')) eps + T eps (e^eps - 1) (advanced composition)."""
    eps, T = np.asarray(epsilon, dtype=float), np.asarray(T, dtype=float)
    if np.any(eps <= 0) or np.any(T < 1):
        raise ValueError(f"need epsilon > 0 and T >= 1, got {epsilon}, {T}")
    if not 0 < delta_prime < 1:
        raise ValueError(f"delta' must lie in (0, 1), got {delta_prime}")
    out = np.sqrt(2.0 * T * np.log(1.0 / delta_prime)) * eps + T * eps * np.expm1(eps)
    return out if out.ndim else float(out)


def corollary1_delta(delta: float, T, delta_prime: float):
    """Corollary 1's total delta: T delta + delta'. A value >= 1 means the guarantee is vacuous."""
    out = np.asarray(T, dtype=float) * delta + delta_prime
    return out if out.ndim else float(out)


@paper_bound("hu2020.corollary1")
def corollary1_total(noise_multiplier: float, T: int, delta: float, delta_prime: float) -> float:
    """Corollary 1's total epsilon' for T releases with noise multiplier sigma_m / C_m: the per-iteration epsilon of
    Theorem 1 for that multiplier (sqrt(2 ln(1.25/delta)) / multiplier) composed by eq. (10)."""
    return corollary1_epsilon(float(epsilon_for_sigma(1.0, noise_multiplier, delta)), T, delta_prime)


def spend(sigma: float, C: float, T: int, delta: float | None = None, delta_prime: float | None = None) -> Spend:
    """One party's release over T iterations of Algorithm 1 with i.i.d. N(0, sigma^2) noise on each sample's shared
    value (Theorem 1's mechanism), as a `Spend`: T Gaussian steps with multiplier sigma / C, C the party's Lemma 1
    sensitivity bound, under feature-level (replace one column) neighbours. With Theorem 1's per-iteration `delta`
    and Corollary 1's `delta_prime` it names Corollary 1 as the paper bound claiming the release."""
    z = float(sigma) / float(C)
    if delta is None or delta_prime is None:
        return Spend(gaussian_steps(z, int(T)), REPLACE_ONE)
    return Spend(gaussian_steps(z, int(T)), REPLACE_ONE, "hu2020.corollary1",
                 {"noise_multiplier": z, "T": int(T), "delta": float(delta), "delta_prime": float(delta_prime)})


def tight_totals(record: Spend, delta_total: float) -> dict:
    """`privacy.spend.totals` of a record at `delta_total`, the PLD grid scaled to the size of the answer (RDP's upper
    bound): a fixed 1e-4 grid takes minutes for the tiny noise multipliers of large per-step epsilons; relative
    accuracy stays about 1e-4."""
    scale = totals(record, delta_total, pld=False)["rdp_eps"]
    return totals(record, delta_total, discretization=max(1e-4, 2e-5 * scale))
