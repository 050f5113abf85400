"""Linearised two-block ADMM with gradient perturbation: XU's DP-ADMM (Algorithm 2) and DP-AccADMM (Algorithm 3).

Problem (2) with B = -I, c = 0 and g = lambda ||.||_1 (the graph-guided fused lasso (11), docs/choices.md#xu-problem):

    min_{x, y} f(x) + lambda ||y||_1   s.t.  A x - y = 0.

One iteration of Algorithm 2 (scaled dual u, order y -> x -> u, docs/choices.md#xu-algorithms):

    y_t = S_{lambda/rho}(A x_{t-1} + u_{t-1})                                                   (3), soft-threshold
    x_t = x_{t-1} - (eta/gamma) [grad f(x_{t-1}) + P_t + rho A^T (A x_{t-1} - y_t + u_{t-1})]  closed form of (7)
    u_t = u_{t-1} + A x_t - y_t                                                                  (5)

with P_t ~ N(0, sigma^2 I_{d1}) and G = gamma I - eta rho A^T A in (7). Algorithm 3 evaluates the same steps at the
extrapolated points (x^_{t-1}, u^_{t-1}) and then applies Nesterov's weights (10):
theta_{t+1} = (1 + sqrt(1 + 4 theta_t^2)) / 2, x^_t = x_t + (theta_t - 1)/theta_{t+1} (x_t - x_{t-1}), same for u.

Both start from u_0 = -(1/rho) (A^T)^+ grad f(x_0) with (A^T)^+ = A (A^T A)^{-1} (A = [W; I] has full column rank;
the paper's "full row rank" is a slip, docs/choices.md#xu-paper-inconsistencies). [!] That u_0 uses the exact data gradient, which Theorem 1 does
not account for; `u0="zero"` is the strict alternative (docs/choices.md#xu-u0 [D-alt]).

The non-private ADMM and AccADMM of XU §V are the same algorithms with sigma = 0 (docs/choices.md#xu-non-private [D]).

Privacy as data: a noisy run records, per repeat, what it released as a `privacy.spend.Spend` (T Gaussian gradient
steps with multiplier sigma / (2c/n), the replace-one sensitivity of the mean gradient; privacy/bounds/xu2020.py),
naming Theorem 1 as the paper bound when its constants are given. The extrapolated points of Algorithm 3 are
post-processing, so DP-AccADMM spends what DP-ADMM spends.

Step size: the paper runs gamma = 1 (§V-B) with eta up to 1/L_f (Lemma 5), although its analysis wants
gamma >= eta rho ||A^T A|| + 1 (G >= I). With lambda/rho small (1e-5 in §V) the y-step absorbs the A-part of the
x-step and the runs are stable (checked by `check_stable`); with a large lambda/rho the same step can cycle
(tests/algorithms/test_linearized.py). A non-finite iterate raises DivergedError naming the problem and eta.

All repeats run together: iterates are arrays with a leading repeat axis (R, d); internally they are kept as columns
(d, R) so that one product X @ x serves every repeat. Each repeat draws its noise from its own Generator, so a
repeat's trajectory does not depend on which other repeats share its batch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..privacy.bounds import xu2020
from ..problems import regularizers
from ..problems.fused_lasso import FusedLasso


soft_threshold = regularizers.prox_l1  # S_kappa(v) = sign(v) max(|v| - kappa, 0): XU's closed-form y-update (3)


class DivergedError(FloatingPointError):
    """A linearised ADMM run did not stay stable at its step size: an iterate became non-finite, or a noise-free run
    ended above its starting objective. The message names the problem (dataset) and eta."""

    def __init__(self, name: str, eta: float, gamma: float, what: str):
        self.name, self.eta, self.gamma = name, float(eta), float(gamma)
        super().__init__(f"{name}: linearised ADMM diverged with eta = {eta:.6g} (gamma = {gamma:g}): {what}. "
                         f"Use a smaller step eta for this dataset.")


def x_update(x_prev: np.ndarray, grad_plus_noise: np.ndarray, Ax_prev_minus_y_plus_u: np.ndarray,
             At, eta: float, rho: float, gamma: float) -> np.ndarray:
    """Closed-form minimiser of eq. (7) for B = -I, c = 0 (columns are repeats):

    x_t = x_{t-1} - (eta/gamma) [grad f(x_{t-1}) + P_t + rho A^T (A x_{t-1} - y_t + u_{t-1})].
    """
    return x_prev - (eta / gamma) * (grad_plus_noise + rho * (At @ Ax_prev_minus_y_plus_u))


@dataclass
class LinearizedRun:
    """Iterates and timings of one batch of repeats of (DP-)(Acc)ADMM.

    x: (R, T+1, d) with x[:, 0] = x_0; y_T, u_T: (R, |E| + d); cpu_time: (T+1,) cumulative process time in
    seconds after each iteration (0 at t = 0) for the whole batch, each iteration's noise draws included;
    settings: the parameters used; spends: one `privacy.spend.Spend` per repeat with sigma > 0, in repeat order
    (none for a noise-free run).
    """

    x: np.ndarray
    y_T: np.ndarray
    u_T: np.ndarray
    cpu_time: np.ndarray
    settings: dict = field(default_factory=dict)
    spends: list = field(default_factory=list)

    @property
    def x_T(self) -> np.ndarray:
        return self.x[:, -1]


def _check(T, eta, rho, gamma, sigma, repeats, rngs, u0):
    if int(T) != T or T < 1:
        raise ValueError(f"T (iterations) must be an integer >= 1, got {T!r}")
    for name, v in (("eta", eta), ("rho", rho), ("gamma", gamma)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    sig = np.broadcast_to(np.asarray(sigma, dtype=float), (repeats,)).copy() if np.ndim(sigma) == 0 \
        else np.asarray(sigma, dtype=float)
    if sig.shape != (repeats,):
        raise ValueError(f"sigma must be a scalar or have one value per repeat ({repeats}), got shape {sig.shape}")
    if np.any(sig < 0) or not np.all(np.isfinite(sig)):
        raise ValueError(f"sigma must be >= 0 and finite, got {sigma!r}")
    if np.any(sig > 0) and (rngs is None or len(rngs) != repeats):
        raise ValueError(f"sigma > 0 needs one numpy Generator per repeat ({repeats}); use rng.repeat_generators")
    if u0 not in ("paper", "zero"):
        raise ValueError(f"u0 must be 'paper' (u_0 = -(1/rho)(A^T)^+ grad f(x_0), as stated) or 'zero' (strict), "
                         f"got {u0!r}")
    return sig


def initial_dual(problem: FusedLasso, x0: np.ndarray, rho: float) -> np.ndarray:
    """u_0 = -(1/rho) (A^T)^+ grad f(x_0) = -(1/rho) A (A^T A)^{-1} grad f(x_0); x0 (d, R) -> (m, R)."""
    g = problem.grad(x0.T).T
    return -(problem.A @ np.linalg.solve(problem.AtA, g)) / rho


def run(problem: FusedLasso, *, T: int, eta: float, rho: float = 1.0, gamma: float = 1.0, sigma=0.0,
        accelerated: bool = False, repeats: int = 1, rngs: Sequence[np.random.Generator] | None = None,
        x0: np.ndarray | None = None, u0: str = "paper", restart: str = "none",
        restart_eta: float = 0.999, name: str = "problem", gradient_bound: float | None = None,
        bound_args: dict | None = None) -> LinearizedRun:
    """Algorithm 2 (accelerated=False) or Algorithm 3 (accelerated=True) for `repeats` runs at once.

    sigma: scalar or (repeats,) noise std (0 gives the non-private ADMM / AccADMM); rngs: one Generator per repeat
    (needed when sigma > 0); x0: (d,) or (repeats, d), default 0 (docs/choices.md#xu-algorithms [D]); u0: "paper" or "zero".
    Algorithm 3's input alpha_0 is never used by the paper and is omitted.
    The y-step (3) is the problem's own prox, y_t = problem.prox_g(A x + u, rho) = argmin_y g(y) + (rho/2)||v - y||^2:
    the soft-threshold at lambda/rho for problem (11), the l2 shrinkage for problems/l2_logistic.py.

    name: what the problem is (the dataset), used in the error raised when the run diverges (DivergedError: an
    iterate that is not finite); `check_stable` adds the objective test for noise-free runs.

    gradient_bound: c, the bound on every per-sample gradient norm the release's sensitivity 2c/n rests on (default
    the problem's own, max_i ||l_i||); bound_args: Theorem 1's `delta` and `mu`, so that each repeat's Spend names
    Theorem 1 as its paper bound (privacy/bounds/xu2020.spend).

    restart (Algorithm 3 only): "none" as in the paper (docs/choices.md#xu-no-restart [D]), or "goldstein": the restart rule of
    Goldstein et al. (2014, Alg. 8), which the paper cites for its acceleration but does not use. It tracks the
    combined residual c_t = rho ||u_t - u^_{t-1}||^2 + rho ||A (x_t - x^_{t-1})||^2 per repeat; when
    c_t >= restart_eta c_{t-1}, that repeat restarts (theta = 1, x^_t = x_{t-1}, u^_t = u_{t-1},
    c_t <- c_{t-1} / restart_eta). Without it, the accelerated last iterate need not settle: on a small problem
    with a large lambda it keeps oscillating near the minimum (tests/algorithms/test_linearized.py). On XU's
    problem (11) with lambda = 1e-5 it does converge, and faster than with the restart (which fires often there):
    after 5,000 iterations on a9a AccADMM without it ends 6e-4 below AccADMM with it.
    """
    sig = _check(T, eta, rho, gamma, sigma, repeats, rngs, u0)
    if restart not in ("none", "goldstein"):
        raise ValueError(f"restart must be 'none' (paper) or 'goldstein', got {restart!r}")
    if not 0 < restart_eta < 1:
        raise ValueError(f"restart_eta must lie in (0, 1), got {restart_eta!r}")
    spends = []
    if np.any(sig > 0):
        c = problem.gradient_bound if gradient_bound is None else float(gradient_bound)
        spends = [xu2020.spend(s, int(T), problem.n, c, **(bound_args or {})) for s in sig if s > 0]
    T, R, d = int(T), int(repeats), problem.d
    A = problem.A
    At = A.T.tocsr()
    x = np.zeros((d, R)) if x0 is None else np.broadcast_to(np.asarray(x0, float).reshape(-1, d), (R, d)).T.copy()
    noisy = [r for r in range(R) if sig[r] > 0]
    P_t = np.zeros((d, R))

    xs = np.empty((T + 1, d, R))
    xs[0] = x
    cpu = np.zeros(T + 1)
    t0 = time.process_time()
    u = initial_dual(problem, x, rho) if u0 == "paper" else np.zeros((A.shape[0], R))
    x_hat, u_hat, theta = x, u, np.ones(R)  # Algorithm 3: x^_0 = x_0, u^_0 = u_0, theta_1 = 1 (one per repeat)
    c_prev = np.full(R, np.inf)
    n_restarts = np.zeros(R, dtype=int)
    for t in range(1, T + 1):
        xb, ub = (x_hat, u_hat) if accelerated else (x, u)
        Axb = A @ xb
        y = problem.prox_g(Axb + ub, rho)                                     # step 2
        # P_t ~ N(0, sigma^2 I_d1), drawn here so that the CPU time of iteration t includes it: each repeat's
        # Generator gives its d numbers of iteration t in turn (the same values as one (T, d) draw up front).
        for r in noisy:  # one call per repeat and iteration: <= a few hundred repeats, d numbers each
            P_t[:, r] = sig[r] * rngs[r].standard_normal(d)
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging step is reported just below
            x_new = x_update(xb, problem.grad(xb.T).T + P_t, Axb - y + ub, At, eta, rho, gamma)  # step 3
        if not np.isfinite(x_new).all():
            raise DivergedError(name, eta, gamma, f"x_t is not finite at iteration t = {t}")
        Ax_new = A @ x_new
        u_new = ub + Ax_new - y                                               # step 4
        if accelerated:
            theta_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))    # step 5
            w = (theta - 1.0) / theta_next
            x_hat_new = x_new + w * (x_new - x)                               # step 6, eq. (10)
            u_hat_new = u_new + w * (u_new - u)                               # step 7
            if restart == "goldstein":  # not in the paper: Goldstein et al.'s rule, off by default
                c = rho * (((u_new - ub) ** 2).sum(0) + ((Ax_new - Axb) ** 2).sum(0))
                go = c < restart_eta * c_prev
                theta_next = np.where(go, theta_next, 1.0)
                x_hat_new = np.where(go, x_hat_new, x)
                u_hat_new = np.where(go, u_hat_new, u)
                c_prev = np.where(go, c, c_prev / restart_eta)
                n_restarts += ~go
            x_hat, u_hat, theta = x_hat_new, u_hat_new, theta_next
        x, u = x_new, u_new
        xs[t] = x
        cpu[t] = time.process_time() - t0
    settings = {"T": T, "eta": float(eta), "rho": float(rho), "gamma": float(gamma), "accelerated": bool(accelerated),
                "repeats": R, "u0": u0, "sigma": sig.tolist(), "restart": restart if accelerated else "n/a",
                "n_restarts": n_restarts.tolist()}
    return LinearizedRun(x=np.moveaxis(xs, 2, 0), y_T=y.T.copy(), u_T=u.T.copy(), cpu_time=cpu, settings=settings,
                         spends=spends)


def run_lanes(problem: FusedLasso, *, T: int, etas, rho: float = 1.0, gamma: float = 1.0, sigma: float = 0.0,
              accelerated: bool = False, rng: np.random.Generator | None = None, u0: str = "paper",
              name: str = "problem") -> np.ndarray:
    """`run` of one repeat at L step sizes etas (L,) at once, as lanes of one run (columns of the iterates, (d, L)):
    the lanes share the problem (one sweep of its rows per iteration for all lanes, `MeanLogisticTerm.grad_lanes`),
    u_0 (every lane starts at x_0 = 0) and the noise: iteration t draws P_t ~ N(0, sigma^2 I) once from `rng` and
    every lane adds it, as a separate `run(..., eta=etas[l], repeats=1, rngs=[rng'])` per lane with a fresh Generator
    rng' of the same seed draws it. So lane l's x_T equals that run's bit for bit on sparse rows (dense rows: the
    lanes' gradients are one BLAS product, equal up to round-off; tests/algorithms/test_linearized.py).
    Returns x_T (L, d)."""
    etas = np.asarray(etas, dtype=float)
    if etas.ndim != 1 or etas.size < 1 or not np.all(np.isfinite(etas) & (etas > 0)):
        raise ValueError(f"etas must be a 1-D array of positive step sizes, got {etas!r}")
    sig = float(_check(T, float(etas.min()), rho, gamma, sigma, 1, None if rng is None else [rng], u0)[0])
    T, L, d = int(T), etas.size, problem.d
    A = problem.A
    At = A.T.tocsr()
    x = np.zeros((d, L))
    # u_0 from x_0 = 0, the same for every lane: computed once on one column, as a one-lane run computes it
    u = np.repeat(initial_dual(problem, x[:, :1], rho), L, axis=1) if u0 == "paper" else np.zeros((A.shape[0], L))
    x_hat, u_hat, theta = x, u, np.ones(L)
    P_t = np.zeros((d, 1))
    for t in range(1, T + 1):
        xb, ub = (x_hat, u_hat) if accelerated else (x, u)
        Axb = A @ xb
        y = problem.prox_g(Axb + ub, rho)                                     # step 2
        if sig > 0:
            P_t = sig * rng.standard_normal(d)[:, None]                       # one draw, every lane
        with np.errstate(over="ignore", invalid="ignore"):
            x_new = x_update(xb, problem.grad_lanes(xb.T).T + P_t, Axb - y + ub, At, etas, rho, gamma)  # step 3
        if not np.isfinite(x_new).all():
            bad = int(np.flatnonzero(~np.isfinite(x_new).all(axis=0))[0])
            raise DivergedError(name, etas[bad], gamma, f"x_t is not finite at iteration t = {t}")
        Ax_new = A @ x_new
        u_new = ub + Ax_new - y                                               # step 4
        if accelerated:
            theta_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))    # step 5
            w = (theta - 1.0) / theta_next
            x_hat, u_hat, theta = x_new + w * (x_new - x), u_new + w * (u_new - u), theta_next   # steps 6-7
        x, u = x_new, u_new
    return np.ascontiguousarray(x.T)


def check_stable(problem, run: LinearizedRun, name: str) -> np.ndarray:
    """F(x_t) of a noise-free run (sigma = 0, one repeat) for every t, after checking that the run is stable.

    Raises DivergedError (naming `name` and eta) when an objective value is not finite or F(x_T) >= F(x_0): with
    sigma = 0, Algorithms 2 and 3 must end below their start at a stable step size (docs/choices.md#xu-step-size). Returns the
    objective trace (T+1,) so callers can record how monotone it was.
    """
    if any(s > 0 for s in run.settings.get("sigma", [0.0])) or run.x.shape[0] != 1:
        raise ValueError("check_stable needs a noise-free run with one repeat (sigma = 0, repeats = 1)")
    F = np.asarray(problem.objective(run.x[0]), dtype=float)
    eta, gamma = run.settings["eta"], run.settings["gamma"]
    if not np.isfinite(F).all():
        bad = int(np.flatnonzero(~np.isfinite(F))[0])
        raise DivergedError(name, eta, gamma, f"the objective is not finite at t = {bad}")
    if F[-1] >= F[0]:
        raise DivergedError(name, eta, gamma, f"the noise-free objective rose from F(x_0) = {F[0]:.6g} to "
                                              f"F(x_T) = {F[-1]:.6g} over T = {len(F) - 1} iterations")
    return F


def xu_dp_admm(problem: FusedLasso, **kwargs) -> LinearizedRun:
    """XU's DP-ADMM, Algorithm 2 (not HUANG's DP-ADMM of algorithms/consensus.py). sigma = 0 gives ADMM."""
    return run(problem, accelerated=False, **kwargs)


def dp_acc_admm(problem: FusedLasso, **kwargs) -> LinearizedRun:
    """XU's DP-AccADMM, Algorithm 3. sigma = 0 gives AccADMM."""
    return run(problem, accelerated=True, **kwargs)


def gamma_min(problem: FusedLasso, eta: float, rho: float) -> float:
    """gamma_min = eta rho ||A^T A||_2 + 1, which the paper requires (G >= I) but its gamma = 1 violates (docs/choices.md#xu-gamma)."""
    return eta * rho * problem.norm_AtA + 1.0


def tune_step(problem: FusedLasso, grid: Sequence[float], *, T: int, rho: float = 1.0, gamma: float = 1.0,
              u0: str = "paper", restart: str = "none", name: str = "problem") -> tuple[float, dict]:
    """The step the noise-free methods tune to: the eta of `grid` at which ADMM and AccADMM (Algorithms 2 and 3 with
    sigma = 0) reach the lowest mean objective F(x_T) after T iterations; ties go to the smaller step.

    Returns (eta, {eta: {"admm": F(x_T), "acc_admm": F(x_T)}}). A step at which a run is unstable (`check_stable`
    raises) gets F = inf and is never chosen; if every step is unstable the DivergedError of the largest is raised.
    XU says only that eta "is a constant on each dataset but differs among these datasets" (§V-B); this rule needs
    no private data beyond what the non-private baselines already use.
    """
    steps = sorted({float(e) for e in grid})
    if not steps or steps[0] <= 0:
        raise ValueError(f"the step grid needs positive values, got {list(grid)!r}")
    table, last_error = {}, None
    for eta in steps:
        row = {}
        for label, accelerated in (("admm", False), ("acc_admm", True)):
            try:
                res = run(problem, T=T, eta=eta, rho=rho, gamma=gamma, accelerated=accelerated, u0=u0,
                          restart=restart if accelerated else "none", name=name)
                row[label] = float(check_stable(problem, res, name)[-1])
            except DivergedError as exc:
                row[label], last_error = float("inf"), exc
        table[eta] = row
    score = {eta: 0.5 * (r["admm"] + r["acc_admm"]) for eta, r in table.items()}
    best = min(steps, key=lambda e: (score[e], e))
    if not np.isfinite(score[best]):
        raise last_error
    return best, table
