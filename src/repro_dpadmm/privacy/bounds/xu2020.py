"""XU Theorem 1 (eq. (8) = (14)): the Gaussian noise level of DP-ADMM and DP-AccADMM (docs/choices.md#xu-gradient-bound).

    sigma^2 = c^2 alpha T / (2 n^2 epsilon mu),    alpha = ln(1/delta) / ((1 - mu) epsilon) + 1.

Derivation (App. A): each noisy gradient is a Gaussian mechanism with l2-sensitivity Delta = c/n, which is
(alpha, alpha Delta^2 / (2 sigma^2))-RDP; T of them compose to T alpha Delta^2 / (2 sigma^2) = mu epsilon, and the
RDP-to-DP conversion term ln(1/delta)/(alpha - 1) = (1 - mu) epsilon brings the total to (epsilon, delta).

[!] For replace-one neighbours (Definition 1: datasets "differing by one element") the mean gradient moves by up to
2c/n, not c/n (docs/choices.md#xu-sensitivity): the proof's c/n is the add/remove-one sensitivity of the mean with n held fixed.
`sensitivity_factor=2` gives the noise level the proof would need at 2c/n (the paper's is `sensitivity_factor=1`,
the default). A run records what it spent as a `Spend` under replace-one (multiplier sigma / (2c/n), `spend`),
naming Theorem 1 (`theorem1_epsilon`, registered as the paper bound "xu2020.theorem1") as the bound that claims it;
whether the published noise nevertheless meets (epsilon, delta) is answered by exact accounting of that record
(`privacy.spend.totals`, PLD): Theorem 1's single RDP order and its RDP-to-DP conversion are loose enough that it
can. `at_sensitivity` accounts the same record at the proof's c/n.
"""

from __future__ import annotations

import math

import numpy as np

from .. import accounting
from ..spend import ADD_OR_REMOVE_ONE, REPLACE_ONE, Spend, gaussian_steps, paper_bound

# The paper's constants (§V-B): delta, mu, and the gradient bound c after unit-norm rows (docs/choices.md#xu-gradient-bound [D]).
DELTA = 1e-3
MU = 0.5
C = 1.0


def _check(epsilon, delta, mu, c, T, n, sensitivity_factor):
    eps = np.asarray(epsilon, dtype=float)
    if not np.all(eps > 0) or not np.all(np.isfinite(eps)):
        raise ValueError(f"epsilon must be > 0 and finite, got {epsilon!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if not 0 < mu < 1:
        raise ValueError(f"mu (the share of epsilon spent as RDP) must lie in (0, 1), got {mu!r}")
    if not c > 0:
        raise ValueError(f"c (the per-sample gradient bound) must be > 0, got {c!r}")
    if int(T) != T or T < 1:
        raise ValueError(f"T (iterations) must be an integer >= 1, got {T!r}")
    if int(n) != n or n < 1:
        raise ValueError(f"n (training samples) must be an integer >= 1, got {n!r}")
    if not sensitivity_factor > 0:
        raise ValueError(f"sensitivity_factor must be > 0 (1: paper, 2: replace-one), got {sensitivity_factor!r}")
    return eps


def rdp_order(epsilon, delta: float = DELTA, mu: float = MU):
    """alpha = ln(1/delta) / ((1 - mu) epsilon) + 1 (eq. (13))."""
    eps = _check(epsilon, delta, mu, 1.0, 1, 1, 1.0)
    out = math.log(1.0 / delta) / ((1.0 - mu) * eps) + 1.0
    return float(out) if np.ndim(epsilon) == 0 else out


def sensitivity(n: int, c: float = C, sensitivity_factor: float = 1.0) -> float:
    """l2-sensitivity of the mean gradient: c/n in the paper; `sensitivity_factor` c/n in general."""
    _check(1.0, 0.5, 0.5, c, 1, n, sensitivity_factor)
    return sensitivity_factor * c / n


def sigma(epsilon, T: int, n: int, delta: float = DELTA, mu: float = MU, c: float = C,
          sensitivity_factor: float = 1.0):
    """Theorem 1: sigma = sqrt(Delta'^2 alpha T / (2 n^2 epsilon mu)) with Delta' = sensitivity_factor * c.

    `epsilon` may be an array (one sigma per budget). Raises ValueError on epsilon <= 0, delta or mu outside
    (0, 1), c <= 0, T < 1 or n < 1.
    """
    eps = _check(epsilon, delta, mu, c, T, n, sensitivity_factor)
    alpha = math.log(1.0 / delta) / ((1.0 - mu) * eps) + 1.0
    out = np.sqrt((sensitivity_factor * c) ** 2 * alpha * T / (2.0 * n * n * eps * mu))
    return float(out) if np.ndim(epsilon) == 0 else out


def rdp_epsilon_at_order(sigma_value: float, T: int, n: int, epsilon: float, delta: float = DELTA,
                         mu: float = MU, c: float = C, sensitivity_factor: float = 1.0) -> float:
    """The paper's own (epsilon, delta) accounting at its single RDP order alpha(epsilon):

    T alpha Delta^2 / (2 sigma^2) + ln(1/delta) / (alpha - 1), with Delta = sensitivity_factor c / n. Equals
    `epsilon` when sigma is Theorem 1's sigma with the same sensitivity factor.
    """
    alpha = rdp_order(epsilon, delta, mu)
    delta_q = sensitivity(n, c, sensitivity_factor)
    return T * alpha * delta_q ** 2 / (2.0 * sigma_value ** 2) + math.log(1.0 / delta) / (alpha - 1.0)


def accounted_epsilon(sigma_value: float, T: int, n: int, delta: float = DELTA, c: float = C,
                      sensitivity_factor: float = 1.0, method: str = "rdp", discretization: float = 1e-4) -> float:
    """Total epsilon at `delta` of T full-batch Gaussian steps by dp-accounting (noise multiplier sigma / Delta).

    `method` "rdp" (dp-accounting's RDP accountant, all orders) or "pld" (privacy loss distributions, tight; it
    rounds each step's loss up to its `discretization` grid, so its total is an upper bound).
    Delta = sensitivity_factor c / n, so `sensitivity_factor=2` accounts the same noise under replace-one.
    """
    z = sigma_value / sensitivity(n, c, sensitivity_factor)
    if method == "rdp":
        return accounting.rdp_epsilon(z, delta, steps=int(T))
    if method == "pld":
        return accounting.pld_epsilon(z, delta, steps=int(T), discretization=discretization)
    raise ValueError(f"method must be 'rdp' or 'pld', got {method!r}")


@paper_bound("xu2020.theorem1")
def theorem1_epsilon(sigma: float, T: int, n: int, delta: float = DELTA, mu: float = MU, c: float = C) -> float:
    """The epsilon Theorem 1 claims for noise `sigma`: eq. (8) solved for epsilon (its sensitivity c/n).

    sigma^2 = c^2 alpha T / (2 n^2 epsilon mu) with alpha = L / ((1 - mu) epsilon) + 1, L = ln(1/delta), is the
    quadratic 2 n^2 mu sigma^2 epsilon^2 - c^2 T epsilon - c^2 T L / (1 - mu) = 0; its positive root.
    """
    _check(1.0, delta, mu, c, T, n, 1.0)
    if not (sigma > 0 and np.isfinite(sigma)):
        raise ValueError(f"sigma must be > 0 and finite, got {sigma!r}")
    a, b = 2.0 * n * n * mu * sigma ** 2, c * c * T
    return float((b + math.sqrt(b * b + 4.0 * a * b * math.log(1.0 / delta) / (1.0 - mu))) / (2.0 * a))


def spend(sigma: float, T: int, n: int, c: float = C, delta: float | None = None, mu: float | None = None) -> Spend:
    """What T noisy gradient steps (Algorithms 2 and 3) with noise std `sigma` release, as a `Spend`: T Gaussian
    steps with multiplier sigma / (2c/n), the l2-sensitivity of the mean gradient under replace-one neighbours
    (c bounds every per-sample gradient). With `delta` and `mu` (Theorem 1's constants) it names Theorem 1 as the
    paper bound claiming the release."""
    z = sigma / sensitivity(n, c, 2.0)
    if delta is None or mu is None:
        return Spend(gaussian_steps(z, int(T)), REPLACE_ONE)
    return Spend(gaussian_steps(z, int(T)), REPLACE_ONE, "xu2020.theorem1",
                 {"sigma": float(sigma), "T": int(T), "n": int(n), "delta": float(delta), "mu": float(mu),
                  "c": float(c)})


def at_sensitivity(record: Spend, sensitivity_factor: float = 1.0) -> Spend:
    """The same release accounted at sensitivity `sensitivity_factor` c/n instead of the recorded replace-one 2c/n
    (multipliers times 2 / sensitivity_factor). Factor 1 is the proof's c/n: the add/remove-one sensitivity of the
    mean gradient with n held fixed; factor 2 returns the record itself."""
    if record.neighbouring != REPLACE_ONE:
        raise ValueError(f"expected a replace-one record (2c/n), got {record.neighbouring!r}")
    _check(1.0, 0.5, 0.5, 1.0, 1, 1, sensitivity_factor)
    if sensitivity_factor == 2.0:
        return record
    zs = accounting.gaussian_multipliers(record.event)
    if zs is None:
        raise ValueError("only a record of Gaussian steps can be accounted at another sensitivity")
    zs = zs * (2.0 / sensitivity_factor)
    event = gaussian_steps(zs[0], len(zs)) if np.all(zs == zs[0]) else gaussian_steps(zs)
    relation = ADD_OR_REMOVE_ONE if sensitivity_factor == 1.0 else REPLACE_ONE
    return Spend(event, relation, record.bound, record.bound_args)
