"""Step sizes, noise calibration and privacy totals of Huang et al., "DP-ADMM" (IEEE TIFS 2019), as the paper states them.

* Lemma 1, eq. (11): l2 sensitivity of the primal update (12a), Delta_{i,k} = 2 c_1 / (m_i (rho + 1/eta_i^k)).
* Theorem 1, eq. (14) = (26): sigma_{i,k} = 2 c_1 sqrt(2 ln(1.25/delta)) / (m_i eps (rho + 1/eta_i^k)).
* Theorem 3, eq. (29): eta_i^k for l1 (non-smooth), constants c_1, c_2, c_w (paper §VI-E: 1, sqrt(104), 23).
* Theorem 4, eq. (34): eta_i^k for l2 (smooth), constants c_1, c_3, c_4, c_w (paper §VI-F: 1, 0.25, 1, 89).
* §III-A: the PVP noise sigma_i = 2 c_1 sqrt(2 ln(1.25/delta)) / ((lambda/n + rho) m_i eps).
* §IV-C / Theorem 2: the total eps-bar of t iterations by the moments accountant (full batch, sampling ratio 1),
  registered as the paper bound ``huang2019.eps_bar`` that the Spends of DP-ADMM, PVP and DPSGD name; DVP's basic
  composition T eps (docs/choices.md#huang-total-privacy) as ``huang2019.dvp_total``.
* Theorems 3/4: the utility-bound constants M_1..M_4 (eqs. (30), (31), (35), (36)).
* docs/choices.md#huang-dvp [D]: the star-network DVP calibration (Chaudhuri et al. 2011, Alg. 2 with n -> m_i).

Every noise level depends on (eps, delta) only through the Gaussian noise multiplier z = sqrt(2 ln(1.25/delta)) / eps,
and so do the eta schedules (ln(1.25/delta)/eps^2 = z^2/2). Each function therefore takes either `epsilon` and
`delta` (the paper's form) or `z` directly, so equal-privacy comparisons can set z.

API
---
``noise_multiplier(epsilon, delta)``; ``eta_l1(k, m, ...)``, ``eta_l2(k, m, ...)``, ``eta_schedule(reg, T, m, ...)``
(arrays over k = 1..T); ``sensitivity(m, rho, eta)``; ``sigma(m, rho, eta, ...)``; ``pvp_sigma(m, rho, lam_n, ...)``;
``pvp_sensitivity``; ``dvp_calibration(epsilon, m, lam_n, rho)`` and ``dvp_epsilon`` (the per-iteration epsilon its
noise gives); ``eps_bar(epsilon, delta, T)`` (moments accountant, continuous order or Abadi et al.'s integer orders
<= 32) and ``dvp_total(epsilon, T)`` (the paper bounds Spends name); the records of a run, ``gaussian_spend(z, T,
delta)`` (DP-ADMM, PVP, DPSGD) and ``dvp_spend(epsilon, T)`` (DVP), and ``spend_totals(spend, delta)`` (the paper's
total beside dp-accounting's RDP and PLD totals of what a run recorded); ``utility_bound_l1/l2(...)``
(M_1/sqrt(t) + M_2/t and M_3/sqrt(t) + M_4/t).
"""

from __future__ import annotations

import numpy as np

from ..accounting import gaussian_multipliers, moments_accountant_epsilon
from ..mechanisms import check_epsilon_delta, gaussian_multiplier
from ..spend import REPLACE_ONE, Spend, gaussian_steps, paper_bound, pure_steps, totals

# Constants of §VI-E (l1) and §VI-F (l2); d = 104, p = 1 for Adult.
C1 = 1.0           # ||l'|| <= c_1: rows normalised to ||a|| <= 1
C3 = 0.25          # ||grad^2 l|| <= 1/4 ||a||^2 <= 1/4
C4 = 1.0           # ||grad^2 R|| <= 1 for R = ||.||^2 / 2
CW_L1 = 23.0       # "we obtain w* by pre-training and set c_w to be 23" [!] docs/choices.md#huang-paper-inconsistencies: ||w*_l1|| is ~104
CW_L2 = 89.0       # "set c_w to be 89"


def noise_multiplier(epsilon: float, delta: float) -> float:
    """z = sqrt(2 ln(1.25/delta)) / epsilon: sigma_{i,k} / Delta_{i,k} of eq. (14), the same at every k (docs/choices.md#huang-step-sizes)."""
    return gaussian_multiplier(epsilon, delta)


def _z(epsilon, delta, z) -> float:
    if z is not None:
        if epsilon is not None or delta is not None:
            raise ValueError("give either (epsilon, delta) or the noise multiplier z, not both")
        if not np.isfinite(z) or z < 0:
            raise ValueError(f"the noise multiplier z must be >= 0, got {z}")
        return float(z)
    if epsilon is None or delta is None:
        raise ValueError("give (epsilon, delta) or the noise multiplier z")
    return noise_multiplier(epsilon, delta)


def _check_m(m):
    m = np.asarray(m, dtype=float)
    if np.any(m < 1):
        raise ValueError(f"every agent needs m_i >= 1 samples, got {m}")
    return m


def _k(k):
    k = np.asarray(k, dtype=float)
    if np.any(k < 1):
        raise ValueError("iterations are numbered k = 1, 2, ...")
    return k


def eta_l1(k, m, epsilon=None, delta=None, *, z=None, lam_n=1e-6, d=104, p=1, c1=C1, c2=None, c_w=CW_L1):
    """Theorem 3, eq. (29): eta_i^k = c_w / sqrt(2k) [(c_1 + lambda c_2 / n)^2 + 8 d p c_1^2 ln(1.25/delta)/(m_i eps)^2]^{-1/2}.

    With z: 8 dp c_1^2 ln(1.25/delta) / (m eps)^2 = 4 dp c_1^2 z^2 / m^2. `lam_n` is lambda/n; c_2 defaults to
    sqrt(dp) (||sgn(w)|| <= sqrt(dp), §VI-E: sqrt(104)).
    [!] The paper's plugged-in form (§VI-E) has 10^-6 sqrt(104)/n where (29) gives 10^-6 sqrt(104); we follow (29)
    (the two differ by < 1e-5 relative, docs/choices.md#huang-paper-inconsistencies).
    """
    zz = _z(epsilon, delta, z)
    k, m = _k(k), _check_m(m)
    c2 = np.sqrt(d * p) if c2 is None else c2
    return c_w / np.sqrt(2.0 * k) / np.sqrt((c1 + lam_n * c2) ** 2 + 4.0 * d * p * c1 ** 2 * zz ** 2 / m ** 2)


def eta_l2(k, m, epsilon=None, delta=None, *, z=None, lam_n=1e-6, d=104, p=1, c1=C1, c3=C3, c4=C4, c_w=CW_L2):
    """Theorem 4, eq. (34): eta_i^k = (c_3 + lambda c_4/n + 4 c_1 sqrt(d p k ln(1.25/delta)) / (m_i eps c_w))^{-1}.

    With z: sqrt(ln(1.25/delta)) / eps = z / sqrt(2). Plugged in (§VI-F): (0.25 + 1e-6 + 2 sqrt(416 k ln(1.25/delta))
    / (89 m_i eps))^{-1}.
    """
    zz = _z(epsilon, delta, z)
    k, m = _k(k), _check_m(m)
    return 1.0 / (c3 + lam_n * c4 + 4.0 * c1 * np.sqrt(d * p * k / 2.0) * zz / (m * c_w))


def eta_schedule(reg: str, T: int, m, epsilon=None, delta=None, *, z=None, **constants) -> np.ndarray:
    """eta_i^k for k = 1..T: Theorem 3 (29) for reg = 'l1', Theorem 4 (34) for reg = 'l2'. Shape (T,) (or (T, n)
    if m is per agent)."""
    if T < 1:
        raise ValueError(f"need T >= 1 iterations, got {T}")
    k = np.arange(1, T + 1, dtype=float).reshape(-1, *([1] * np.ndim(m)))
    if reg == "l1":
        return eta_l1(k, m, epsilon, delta, z=z, **constants)
    if reg == "l2":
        return eta_l2(k, m, epsilon, delta, z=z, **constants)
    raise ValueError(f"reg must be 'l1' or 'l2', got {reg!r}")


def sensitivity(m, rho: float, eta, c1: float = C1):
    """Lemma 1, eq. (11): Delta_{i,k} = 2 c_1 / (m_i (rho + 1/eta_i^k))."""
    if not rho > 0:
        raise ValueError(f"rho must be > 0, got {rho}")
    eta = np.asarray(eta, dtype=float)
    if np.any(eta <= 0):
        raise ValueError("step sizes eta must be > 0")
    return 2.0 * c1 / (_check_m(m) * (rho + 1.0 / eta))


def sigma(m, rho: float, eta, epsilon=None, delta=None, *, z=None, c1: float = C1):
    """Theorem 1, eq. (14) = (26): sigma_{i,k} = 2 c_1 sqrt(2 ln(1.25/delta)) / (m_i eps (rho + 1/eta_i^k)) = z Delta."""
    return _z(epsilon, delta, z) * sensitivity(m, rho, eta, c1)


def pvp_sensitivity(m, rho: float, lam_n: float, c1: float = C1):
    """§III-A (supplementary App. A): the l2 sensitivity of PVP's exact primal update, 2 c_1 / (m_i (lambda/n + rho))."""
    if not rho > 0 or lam_n < 0:
        raise ValueError(f"need rho > 0 and lambda/n >= 0, got {rho}, {lam_n}")
    return 2.0 * c1 / ((lam_n + rho) * _check_m(m))


def pvp_sigma(m, rho: float, lam_n: float, epsilon=None, delta=None, *, z=None, c1: float = C1):
    """§III-A: sigma_i = 2 c_1 sqrt(2 ln(1.25/delta)) / ((lambda/n + rho) m_i eps) = z ``pvp_sensitivity``."""
    if not rho > 0 or lam_n < 0:
        raise ValueError(f"need rho > 0 and lambda/n >= 0, got {rho}, {lam_n}")
    return _z(epsilon, delta, z) * 2.0 * c1 / ((lam_n + rho) * _check_m(m))


def dvp_calibration(epsilon: float, m: int, lam_n: float, rho: float, c: float = 0.25) -> dict:
    """docs/choices.md#huang-dvp [D]: DVP on the star network at per-iteration pure epsilon (Chaudhuri et al. 2011, Alg. 2, n -> m_i).

    Lambda = lambda/n + rho (strong convexity of the non-data part), c = 1/4 (Hessian bound of the logistic loss):
    eps' = eps - 2 ln(1 + c/(m Lambda)); if eps' > 0 then Delta = 0, else Delta = c/(m (e^{eps/4} - 1)) - Lambda and
    eps' = eps/2. The noise b has density ~ exp(-(eps'/2) ||b||), i.e. alpha = eps'/2 and E||b|| = 2 d / eps'.
    """
    check_epsilon_delta(epsilon)
    Lam = lam_n + rho
    if not Lam > 0 or m < 1:
        raise ValueError(f"need lambda/n + rho > 0 and m >= 1, got {Lam}, {m}")
    eps_p = epsilon - 2.0 * np.log1p(c / (m * Lam))
    if eps_p > 0:
        return {"eps_prime": float(eps_p), "Delta": 0.0, "alpha": float(eps_p / 2.0)}
    Delta = c / (m * np.expm1(epsilon / 4.0)) - Lam
    return {"eps_prime": epsilon / 2.0, "Delta": float(Delta), "alpha": epsilon / 4.0}


def dvp_epsilon(alpha: float, Delta: float, m: int, lam_n: float, rho: float, c: float = 0.25) -> float:
    """The pure epsilon of one DVP iteration from the noise and regulariser it used (the privacy proof of Chaudhuri et
    al. 2011, Alg. 2, with n -> m_i): noise of density ~ exp(-alpha ||b||) spends eps' = 2 alpha, and the data's
    influence on the density ratio adds 2 ln(1 + c / (m (Lambda + Delta))), Lambda + Delta the strong convexity of the
    non-data part (lambda/n + rho + Delta)."""
    Lam = lam_n + rho + Delta
    if not alpha > 0 or not Lam > 0 or m < 1:
        raise ValueError(f"need alpha > 0, lambda/n + rho + Delta > 0 and m >= 1, got {alpha}, {Lam}, {m}")
    return float(2.0 * alpha + 2.0 * np.log1p(c / (m * Lam)))


EPS_BAR = "huang2019.eps_bar"


@paper_bound(EPS_BAR)
def eps_bar(epsilon=None, delta=None, T: int = 100, *, z=None, total_delta=None, integer_orders: bool = False,
            max_order: float = 32) -> float:
    """Total privacy loss of T full-batch Gaussian iterations by the moments accountant (§IV-C; docs/choices.md#privacy-formulas, docs/choices.md#huang-total-privacy).

    alpha_T(lambda) = T lambda (lambda + 1) / (2 z^2), eps-bar = min_lambda [alpha_T(lambda) + ln(1/delta-bar)]/lambda.
    Default [D]: delta-bar = delta and continuous lambda (closed form T/(2z^2) + sqrt(2 T ln(1/delta-bar))/z);
    `integer_orders=True` restricts lambda to 1..max_order as in Abadi et al.'s implementation.
    """
    zz = _z(epsilon, delta, z)
    dbar = delta if total_delta is None else total_delta
    if dbar is None:
        raise ValueError("give total_delta when the noise multiplier z is given")
    if integer_orders:
        return moments_accountant_epsilon(zz, T, dbar, max_lambda=max_order, integer_lambda=True)
    return float(moments_accountant_epsilon(zz, T, dbar))


# The PLD grid of the Huang items' totals (accounting.pld_epsilon's default), kept so that the totals are those the
# items have always reported (spend.totals would otherwise pick a grid from the RDP total).
PLD_GRID = 1e-4


def gaussian_spend(z: float, T: int, delta: float | None) -> Spend:
    """The record of T full-batch Gaussian releases of noise multiplier z = sigma / Delta (replace-one sensitivity,
    Lemma 1), claimed by the paper's moments-accountant eps-bar at delta-bar = delta [D] (docs/choices.md#huang-total-privacy); without the
    run's delta (a run given z alone) no paper bound is named."""
    bound = None if delta is None else EPS_BAR
    args = {} if delta is None else {"z": float(z), "T": int(T), "total_delta": float(delta)}
    return Spend(gaussian_steps(float(z), int(T)), REPLACE_ONE, bound, args)


DVP_TOTAL = "huang2019.dvp_total"


@paper_bound(DVP_TOTAL)
def dvp_total(epsilon: float, T: int) -> float:
    """DVP's total over T pure epsilon-DP iterations as the paper composes them: basic composition, T eps (docs/choices.md#huang-total-privacy;
    the paper states no DVP total)."""
    return T * epsilon


def dvp_spend(epsilon: float, T: int) -> Spend:
    """The record of T pure epsilon-DP releases (DVP), claimed by their basic composition ``dvp_total``."""
    return Spend(pure_steps(np.full(int(T), float(epsilon))), REPLACE_ONE, DVP_TOTAL,
                 {"epsilon": float(epsilon), "T": int(T)})


def spend_totals(spend: Spend, delta: float) -> dict:
    """`privacy.spend.totals` of a recorded run at total `delta` (the paper's eps-bar, dp-accounting's RDP and PLD),
    with the paper bound's integer-order variant (`paper_eps_int32`, Abadi et al.'s orders <= 32), the number of
    composed steps and, when every step has the same one, the noise multiplier."""
    if spend.bound == EPS_BAR and spend.bound_args["total_delta"] != delta:
        raise ValueError(f"the recorded eps-bar is at delta-bar = {spend.bound_args['total_delta']:g} (the run's "
                         f"delta), not at the requested delta = {delta:g}")
    out = totals(spend, delta, discretization=PLD_GRID)
    zs = gaussian_multipliers(spend.event)
    if zs is not None:
        out["steps"] = int(zs.size)
        if np.all(zs == zs[0]):
            out["noise_multiplier"] = float(zs[0])
    if spend.bound == EPS_BAR:
        out["paper_eps_int32"] = eps_bar(**spend.bound_args, integer_orders=True)
    return out


def utility_bound_l1(t, m, n: int, epsilon: float, delta: float, *, beta: float = 0.0, rho: float = 0.1,
                     lam_n: float = 1e-6, d: int = 104, p: int = 1, c1: float = C1, c2: float | None = None,
                     c_w: float = CW_L1):
    """Theorem 3, eqs. (30)-(32): M_1(eps, delta)/sqrt(t) + M_2/t, with M_1 = sum_i c_w sqrt(2 (c_1 + lambda c_2/n)^2
    + 16 d p c_1^2 ln(1.25/delta)/(m_i eps)^2) and M_2 = n (rho c_w^2 + beta^2/rho)/2 (equal m_i)."""
    check_epsilon_delta(epsilon, delta)
    c2 = np.sqrt(d * p) if c2 is None else c2
    L = np.log(1.25 / delta)
    M1 = n * c_w * np.sqrt(2 * (c1 + lam_n * c2) ** 2 + 16 * d * p * c1 ** 2 * L / (m * epsilon) ** 2)
    M2 = n * (rho * c_w ** 2 + beta ** 2 / rho) / 2
    t = np.asarray(t, dtype=float)
    return M1 / np.sqrt(t) + M2 / t


def utility_bound_l2(t, m, n: int, epsilon: float, delta: float, *, beta: float = 0.0, rho: float = 0.1,
                     lam_n: float = 1e-6, d: int = 104, p: int = 1, c1: float = C1, c3: float = C3, c4: float = C4,
                     c_w: float = CW_L2):
    """Theorem 4, eqs. (35)-(37): M_3(eps, delta)/sqrt(t) + M_4/t, with M_3 = sum_i 4 c_w c_1 sqrt(d p ln(1.25/delta))
    / (m_i eps) and M_4 = (n c_w^2 (c_3 + lambda c_4/n + rho) + n beta^2/rho)/2 (equal m_i)."""
    check_epsilon_delta(epsilon, delta)
    M3 = n * 4 * c_w * c1 * np.sqrt(d * p * np.log(1.25 / delta)) / (m * epsilon)
    M4 = (n * c_w ** 2 * (c3 + lam_n * c4 + rho) + n * beta ** 2 / rho) / 2
    t = np.asarray(t, dtype=float)
    return M3 / np.sqrt(t) + M4 / t
