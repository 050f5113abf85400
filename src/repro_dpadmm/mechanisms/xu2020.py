"""XU et al.'s DP-ADMM and DP-AccADMM (linearised ADMM with gradient perturbation, Algorithms 2 and 3) as a mechanism.

Each iteration's x-step uses the mean gradient plus P_t ~ N(0, sigma^2 I) (step 3); the released x_t is an affine
image of it (x_t = x-hat_{t-1} - (eta/gamma)(grad f + P_t + ...)). Theorem 1 (eq. (8) = (14)) calibrates
sigma^2 = c^2 alpha T / (2 n^2 eps mu) from the sensitivity c/n; under replace-one neighbours (Definition 1) the mean
gradient moves by up to 2c/n (docs/choices.md#xu-sensitivity), which is the sensitivity every sound accounting here uses
(`sensitivity_factor` chooses the one Theorem 1 is evaluated with: 1 as published, 2 corrected).

* `GradientPerturbation(accelerated=..., published=...)`: `published=True` is the algorithm as the paper runs it,
  sigma from Theorem 1 at c/n and u_0 = -(1/rho)(A^T)^+ grad f(x_0) from the exact gradient (its true epsilon is
  accounted with the extra sensitivity u_0 adds, `u0_sensitivity_factors`); `published=False` calibrates sigma so
  that the T releases meet a total by the PLD accountant at 2c/n, with u_0 = 0.
* XU's algorithms are centralised: one curator holds all n records (`distributed = False`).

Audits. `audit_case`: one iteration from a gradient canary's state on the fused lasso (11) of the canary datasets.
`one_run_canaries` / `one_run_scores`: whole runs with k canaries e_j (unit norm, on the least used coordinates,
label S = +1 / -1: their gradients differ by exactly e_j / n at every state), x_t public for all t; the adversary
rebuilds y_t, u_t from them (its u_0 from the all-+1 data: u_0's dependence on the canaries only costs the score
power) and scores the residual of each x-step on e_j.
`white_box_canaries` / `one_run_white_box`: the white-box threat model (Nasr et al. 2023's gradient canaries):
the canary's gradient S c e_j is inserted into step 3's noisy gradient query, so the two states are 2c/n apart
there, the replace-one bound (the label-flip records above reach c/n, half of it). A violation under it would mean
the noise is too small for the sensitivity of the query, whether or not real records reach the bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from ..algorithms import linearized as lin
from ..privacy import accounting, calibrate
from ..privacy.audit.canaries import GradientCanary, least_used
from ..privacy.audit.trials import AuditCase
from ..privacy.bounds import xu2020 as xb
from ..privacy.spend import REPLACE_ONE, Spend, gaussian_steps, totals
from ..problems import fused_lasso as fl
from .base import AUDIT, AUDIT_RUN, FRONTIER, Claim, GaussianMechanism, OneRun, RecordCanaryAudit
from .layouts import CURATOR


def graph_options(g: dict, d: int) -> dict:
    """`fused_lasso.estimate_graph` options from a config block (alphas, edges per feature, tol, max_iter)."""
    return {"alphas": tuple(g.get("alphas", fl.ALPHA_GRID)),
            "min_edges": int(round(g.get("min_edges_per_feature", 1) * d)),
            "max_edges": int(round(g.get("max_edges_per_feature", 5) * d)),
            "tol": float(g.get("tol", 1e-4)), "max_iter": int(g.get("max_iter", 200))}


def u0_sensitivity_factors(T: int, lam: float, rho: float, accelerated: bool) -> np.ndarray:
    """How much XU's u_0 = -(1/rho) grad f(x_0) (the exact gradient; A = I here) raises the sensitivity of each
    released x_t on the l2 problem: factor_t = 1 + (1 - s) |c^_{t-1}|, t = 1..T.

    With s = rho / (lam + rho) the y-step is y_t = s (x^_{t-1} + u^_{t-1}), so the x-step's bracket is
    grad f(x^_{t-1}) + P_t + rho (1 - s)(x^_{t-1} + u^_{t-1}). Given the released x's, u's data-dependent part is
    c_t u_0 with c_0 = 1, c_t = (1 - s) c^_{t-1} (u_t = u^_{t-1} + x_t - y_t) and c^_t = c_t (Algorithm 2) or
    (1 + w_t) c_t - w_t c_{t-1} (Algorithm 3's extrapolation, w_t = (theta_t - 1)/theta_{t+1}). So step t queries
    grad f(x^_{t-1}) - (1 - s) c^_{t-1} grad f(x_0), whose replace-one sensitivity is (2c/n)(1 + (1 - s)|c^_{t-1}|).
    With lam = 1e-6, rho = 1 the factors are at most 1 + 1e-6: on this problem u_0 barely matters (on XU's fused
    lasso the exact gradient also passes the soft-threshold). y_T, Algorithm 2's other output, holds c_{T-1} u_0
    without noise; the frontier releases x_t only.
    """
    s = rho / (lam + rho)
    c_prev, c, c_hat, theta = 1.0, 1.0, 1.0, 1.0
    out = np.empty(int(T))
    for t in range(int(T)):
        out[t] = 1.0 + (1.0 - s) * abs(c_hat)
        c_prev, c = c, (1.0 - s) * c_hat
        if accelerated:
            theta_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * theta))
            w = (theta - 1.0) / theta_next
            c_hat, theta = (1.0 + w) * c - w * c_prev, theta_next
        else:
            c_hat = c
    return out


@dataclass(frozen=True)
class GradientPerturbation(GaussianMechanism):
    """XU's Algorithm 2 (or 3, `accelerated`) with noise sigma on the mean gradient of n records.

    n: records; lam: the problem's regularisation weight (u_0's effect on the l2 problem); rho, gamma (§V-B);
    mu, c: Theorem 1's RDP share and per-sample gradient bound (c = 1 after unit-norm rows, docs/choices.md#xu-gradient-bound);
    eta, eta_rule, dataset: the step size as `fused_lasso.resolve_step_size` reads it (default 1/L_f, the bound of its Lemma 5);
    step_scale multiplies it.
    """

    accelerated: bool = False
    published: bool = False       # sigma from Theorem 1 as stated (c/n), u_0 from the exact gradient
    u0: str = "zero"
    sensitivity_factor: float = 1.0   # the sensitivity Theorem 1 is evaluated with (`paper_noise`), in units of c/n
    n: int = 1
    lam: float = 1e-6
    rho: float = 1.0
    gamma: float = 1.0
    mu: float = xb.MU
    c: float = xb.C
    eta: object = "auto"
    eta_rule: str = "paper"
    dataset: str = ""
    step_scale: float = 1.0

    paper: ClassVar[str] = "xu2020_dpaccadmm"
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER})
    layout: ClassVar = CURATOR
    step_name: ClassVar[str] = "eta (1/L_f, the bound of its Lemma 5)"
    paper_accounting: ClassVar[str] = "Theorem 1 (sensitivity c/n, one RDP order)"
    distributed: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return "DP-AccADMM" if self.accelerated else "DP-ADMM"

    @property
    def label(self) -> str:
        return f"XU {self.name}{' as published' if self.published else ''} (centralised)"

    @property
    def release(self) -> str:
        alg = "accelerated linearised ADMM (Alg. 3)" if self.accelerated else "linearised ADMM (Alg. 2)"
        if self.published:
            return f"as XU {self.name}, with sigma from Theorem 1 (c/n) and u_0 from the exact gradient"
        return f"Gaussian gradient perturbation, {alg}, u_0 = 0"

    @property
    def noise_name(self) -> str:
        return "sigma" if self.published else "z"

    @property
    def sound(self) -> bool:
        return not self.published

    @property
    def sensitivity(self) -> float:
        """Replace-one l2-sensitivity of the mean gradient, 2c/n (the paper takes c/n)."""
        return xb.sensitivity(self.n, self.c, sensitivity_factor=2.0)

    def paper_noise(self, epsilon: float, delta: float, T: int, n: int | None = None) -> float:
        """Theorem 1's sigma for (epsilon, delta) over T iterations on n records (default self.n)."""
        return xb.sigma(epsilon, T, self.n if n is None else n, delta=delta, mu=self.mu, c=self.c,
                        sensitivity_factor=self.sensitivity_factor)

    def spend(self, T: int, delta: float, z: float, u0_factors: np.ndarray | None = None) -> Spend:
        """T releases with multiplier z = sigma / (2c/n) (divided per step by u_0's sensitivity factors, if any);
        Theorem 1's claim for sigma = z 2c/n. (The record bounds.xu2020.spend makes from sigma, with the calibrated
        multiplier kept as it is rather than recomputed from sigma, and u_0's per-step factors.)"""
        event = gaussian_steps(z, T) if u0_factors is None else gaussian_steps(z / u0_factors)
        return Spend(event, REPLACE_ONE, "xu2020.theorem1",
                     {"sigma": z * self.sensitivity, "T": int(T), "n": int(self.n), "delta": float(delta),
                      "mu": float(self.mu), "c": float(self.c)})

    def calibrate(self, target: float, delta: float, T: int, *, rtol: float = 2e-3, how: str = "optimal") -> dict:
        """Corrected: z by the PLD accountant at 2c/n (`GaussianMechanism.calibrate`), sigma = z 2c/n, and what
        Theorem 1 claims for it. Published: sigma from Theorem 1 at `target` (the claim), and its true total: the PLD
        of its T steps at 2c/n with u_0's factors."""
        if not self.published:
            out = super().calibrate(target, delta, T, rtol=rtol, how=how)
            out["sigma"] = out["z"] * self.sensitivity
            return out
        sig = xb.sigma(target, T, self.n, delta, self.mu, self.c, 1.0)
        z = sig / self.sensitivity   # multiplier w.r.t. the replace-one sensitivity 2c/n
        factors = u0_sensitivity_factors(T, self.lam, self.rho, self.accelerated)
        tot = totals(self.spend(T, delta, z, factors), delta, discretization=accounting.pld_grid(target))
        return {"noise": sig, "sigma": sig, "z": z, "paper_eps": float(target), "evaluations": 0,
                "u0_factor_max": factors.max(),
                "accounting": "none: XU Theorem 1 as published (sensitivity c/n; u_0 from the exact gradient); the "
                              "true epsilon is the PLD of its T steps under replace-one, u_0 included",
                "tight_eps": tot["pld_eps"], "rdp_eps": tot["rdp_eps"]}

    def step_size(self, problem) -> float:
        eta = fl.resolve_step_size({"eta": self.eta, "eta_rule": self.eta_rule, "rho": self.rho}, self.dataset,
                                   problem)[0]
        return eta if self.step_scale == 1.0 else eta * self.step_scale

    def run(self, problems: Iterable, cal: dict | None, T: int, rngs, *, noiseless: bool = False) -> np.ndarray:
        """Final x_T per repeat, one problem per repeat: (R, 1, d) (one model: the algorithm is centralised).
        `noiseless`: sigma = 0."""
        sigma = 0.0 if noiseless else float(cal["sigma"])
        out = []
        for problem, g in zip(problems, rngs):
            res = lin.run(problem, T=T, eta=self.step_size(problem), rho=self.rho, gamma=self.gamma, sigma=sigma,
                          accelerated=self.accelerated, repeats=1, rngs=[g], u0=self.u0)
            out.append(res.x_T)
        return np.stack(out)

    def run_lanes(self, problems: Iterable, cal: dict | None, T: int, rngs, scales, *,
                  noiseless: bool = False) -> np.ndarray:
        """`run` at each multiple of `scales` of eta, as lanes of one run per repeat (``linearized.run_lanes``: the
        same rows, u_0 and noise draws for every lane): (L, R, 1, d), lane l equal bit for bit to
        ``replace(self, step_scale=scales[l]).run(...)`` with fresh Generators of the same seeds."""
        sigma = 0.0 if noiseless else float(cal["sigma"])
        out = []
        for problem, g in zip(problems, rngs):
            eta = replace(self, step_scale=1.0).step_size(problem)   # the paper's eta, then `step_size`'s rule
            etas = [eta if float(s) == 1.0 else eta * float(s) for s in scales]
            out.append(lin.run_lanes(problem, T=T, etas=etas, rho=self.rho, gamma=self.gamma, sigma=sigma,
                                     accelerated=self.accelerated, rng=g, u0=self.u0))
        return np.stack(out, axis=1)[:, :, None, :]

    # ------------------------------------------------------------------------------------------- audits
    def audit_case(self, canary: GradientCanary, epsilon: float, delta: float, graph: dict) -> AuditCase:
        """One iteration (T = 1) started at x_0 = the canary state, on the fused lasso (11) of each canary dataset
        with the feature graph estimated on the common rows (`graph`: estimate_graph options) and held fixed.
        Claimed: Theorem 1 with T = 1 at (epsilon, delta) and this mechanism's sensitivity factor. Released: x_1,
        whose noise is (eta/gamma) P_1."""
        eps, delta, factor = float(epsilon), float(delta), float(self.sensitivity_factor)
        n = canary.m
        common = canary.X[0][:-1]
        g = fl.estimate_graph(common, **graph_options(graph, common.shape[1]))
        problems = [fl.build(canary.X[b], canary.y[b], self.lam, graph=g)[0] for b in (0, 1)]
        eta = problems[0].default_eta(self.rho)
        sigma = self.paper_noise(eps, delta, 1, n=n)

        def step(b: int, noise_factor: float, rngs: Sequence) -> np.ndarray:
            return lin.run(problems[b], T=1, eta=eta, rho=self.rho, gamma=self.gamma, sigma=sigma * noise_factor,
                           accelerated=self.accelerated, repeats=len(rngs), rngs=rngs, x0=canary.state,
                           u0=self.u0).x_T

        label = "paper's sensitivity c/n" if factor == 1 else f"sensitivity {factor:g} c/n (replace-one)"
        return AuditCase(
            label=f"XU {self.name} step, {label}", paper=self.paper, epsilon=eps, delta=delta, sigma=sigma,
            sensitivity=2.0 * self.c / n, paper_sensitivity=factor * self.c / n,
            pair_distance=canary.gradient_gap(), step=step, correct=factor >= 2,
            neighbours=f"replace-one record ({n - 1} rows + canary)",
            notes=[f"eta = {eta:.4g}, gamma = {self.gamma:g}, rho = {self.rho:g}, u0 = {self.u0}, graph: "
                   f"{g.n_edges} edges (estimated on the common rows, held fixed)"])

    def claim(self, sigma: float, paper_eps: float, delta: float, T: int) -> Claim:
        return Claim(delta, sigma, paper_eps,
                     accounting.analytic_gaussian_epsilon(sigma / self.sensitivity, delta, steps=int(T)))

    def paper_claim(self, epsilon: float, delta: float, T: int) -> Claim:
        """Theorem 1 as stated: sigma for a total (epsilon, delta); the paper claims epsilon."""
        return self.claim(self.paper_noise(epsilon, delta, T), float(epsilon), delta, T)

    def level_claim(self, level: float, delta: float, T: int) -> Claim:
        """The sigma whose T releases total exactly `level` at 2c/n; its claimed total is dp-accounting's RDP of
        the same noise (the accountant of the frontier's corrected runs, all orders)."""
        s = calibrate.gaussian_multiplier_exact(level, delta, T).value * self.sensitivity
        paper = totals(self.spend(T, delta, s / self.sensitivity), delta, pld=False)["rdp_eps"]
        return self.claim(s, paper, delta, T)

    def one_run(self, st: OneRunCanaries, T: int, sigma: float, factor: float, rngs) -> OneRun:
        """Scores (R, k) with noise sigma x factor: one library run per dataset (x_t for all t public); the adversary
        rebuilds y_t, u_t. The unit canary's per-step gap is 1/n: multiplier sigma x factor x n."""
        sigma_run = sigma * factor
        eta = 1.0 / st.plus.L_f                        # docs/choices.md#xu-step-size
        A, At = st.plus.A, st.plus.A.T.tocsr()
        # one library call per run: each run's canary labels make its own problem (the library batches repeats of
        # one problem only); the adversary's side is batched over runs
        xs = np.stack([lin.run(p, T=T, eta=eta, rho=self.rho, gamma=self.gamma, sigma=sigma_run,
                               accelerated=self.accelerated, repeats=1, rngs=[g], u0=self.u0).x[0]
                       for p, g in zip(st.problems, rngs)])  # (R, T+1, d)
        X = xs.transpose(1, 2, 0)                      # (T+1, d, R): columns are runs
        u = lin.initial_dual(st.plus, X[0], self.rho) if self.u0 == "paper" else np.zeros((A.shape[0], len(xs)))
        score = np.zeros((len(xs), len(st.coords)))
        for t in range(1, T + 1):
            Ax = A @ X[t - 1]
            yv = st.plus.prox_g(Ax + u, self.rho)
            pred = lin.x_update(X[t - 1], st.plus.grad(X[t - 1].T).T, Ax - yv + u, At, eta, self.rho, self.gamma)
            # residual (gamma n / eta)(x_t - pred): N(0, (n sigma)^2) + (-1 on e_j if S = -1)
            score += ((X[t] - pred)[st.coords] * (self.gamma * st.n / eta)).T
            u = u + A @ X[t] - yv
        return OneRun(score, sigma * factor * self.n, {})

    def one_run_white_box(self, st: WhiteBoxCanaries, T: int, sigma: float, factor: float, rngs) -> OneRun:
        """White-box canaries (`white_box_canaries`): canary slot l adds S c e_j / n to the mean gradient of step 3,
        the noisy query Theorem 1's sensitivity is taken at, so the two states are 2c/n apart there (replace-one's
        bound; Theorem 1 takes c/n). Every run is a column of one problem (the clean rows and the empty canary
        records are the same in every run; only the inserted gradients differ), each drawing P_t from its own
        Generator; x_t for all t public, u_0 from the clean data's gradient (the insertion is at the noisy query
        only). The adversary predicts x_t without the canaries; the residual x gamma n / (eta c) on e_j is
        S + N(0, (n sigma factor / c)^2): multiplier sigma x factor / (2c/n)."""
        if self.accelerated:
            raise ValueError("the white-box one-run audit runs XU's DP-ADMM (Algorithm 2), not DP-AccADMM")
        p, R, d = st.problem, len(rngs), st.problem.d
        sig = sigma * factor
        eta = 1.0 / p.L_f                              # docs/choices.md#xu-step-size
        A, At = p.A, p.A.T.tocsr()
        insert = np.zeros((d, R))
        insert[st.coords] = st.S.T * (self.c / st.n)
        X = np.zeros((d, R))
        u = lin.initial_dual(p, X, self.rho) if self.u0 == "paper" else np.zeros((A.shape[0], R))
        score = np.zeros((R, len(st.coords)))
        for _ in range(T):
            Ax = A @ X
            yv = p.prox_g(Ax + u, self.rho)                                              # step 2
            P = sig * np.stack([g.standard_normal(d) for g in rngs], axis=1)
            g = p.grad(X.T).T
            pred = lin.x_update(X, g, Ax - yv + u, At, eta, self.rho, self.gamma)
            X = lin.x_update(X, g + insert + P, Ax - yv + u, At, eta, self.rho, self.gamma)  # step 3
            score += ((pred - X)[st.coords] * (self.gamma * st.n / (eta * self.c))).T
            u = u + A @ X - yv                                                           # step 4
        return OneRun(score, sig / (2.0 * self.c / st.n), {})


@dataclass(frozen=True)
class XuDpAdmm(RecordCanaryAudit, GradientPerturbation):
    """XU's DP-ADMM (Algorithm 2) with replace-one calibration and u_0 = 0 on the frontier; the XU method of both
    audits (their constants from the audits' `xu2020` blocks, u_0 as configured there)."""

    id: ClassVar[str] = "xu_dpadmm"
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER, AUDIT, AUDIT_RUN})
    short_label: ClassVar[str] = "XU DP-ADMM"
    audit_kind: ClassVar[str] = "xu2020"
    audit_run_block: ClassVar[str] = "xu2020"
    audit_run_dataset: ClassVar[str] = "adult_huang2019"

    @staticmethod
    def _constants(xp: dict) -> dict:
        return {"u0": xp.get("u0", "paper"), "lam": float(xp["lam"]), "rho": float(xp["rho"]),
                "gamma": float(xp["gamma"]), "mu": float(xp["mu"])}

    @classmethod
    def audited(cls, params: dict, mech: dict, canary: GradientCanary) -> AuditCase:
        """The one-step audit's case: the `xu2020` constants, the entry's sensitivity factor, n = the canary's
        rows."""
        xp = params["xu2020"]
        xu = cls(**cls._constants(xp), sensitivity_factor=float(mech.get("sensitivity_factor", 1)), n=canary.m,
                 c=float(xp["c"]))
        return xu.audit_case(canary, float(mech["epsilon"]), float(params["delta"]), xp.get("graph", {}))

    @classmethod
    def for_audit_run(cls, params: dict) -> XuDpAdmm:
        xp = params["xu2020"]
        return cls(**cls._constants(xp), n=int(xp["rows"]), c=float(xp.get("c", 1.0)))

    def one_run_setup(self, X, y, params: dict, rng_of) -> OneRunCanaries:
        """The whole-run audit's problems with canaries (`one_run_canaries`) from its `xu2020` block."""
        xp = params["xu2020"]
        return one_run_canaries(X, y, rows=xp["rows"], canaries=xp["canaries"], runs=xp["runs"],
                                lam=float(xp["lam"]), graph=xp.get("graph", {}), rows_rng=rng_of("xu-rows"),
                                signs_rng=rng_of("xu", "signs"))

    def white_box_setup(self, X, y, params: dict, rng_of) -> WhiteBoxCanaries:
        """The whole-run audit's white-box canaries (`white_box_canaries`) from its block's `white_box` entry."""
        xp = params["xu2020"]
        wb = xp["white_box"]
        return white_box_canaries(X, y, rows=xp["rows"], canaries=wb["canaries"], runs=wb["runs"],
                                  lam=float(xp["lam"]), graph=xp.get("graph", {}), rows_rng=rng_of("xu-rows"),
                                  signs_rng=rng_of(self.id + "_wb", "signs"))

    def claim_kwargs(self, setup, params: dict) -> tuple[dict | None, dict | None]:
        return None, None


@dataclass(frozen=True)
class XuDpAccAdmm(GradientPerturbation):
    """XU's DP-AccADMM (Algorithm 3) with replace-one calibration and u_0 = 0."""

    accelerated: bool = True
    id: ClassVar[str] = "xu_dpaccadmm"


@dataclass(frozen=True)
class XuDpAdmmPaper(GradientPerturbation):
    """XU's DP-ADMM as published: Theorem 1's sigma at c/n, u_0 from the exact gradient (its true total accounted)."""

    published: bool = True
    u0: str = "paper"
    id: ClassVar[str] = "xu_dpadmm_paper"


@dataclass(frozen=True)
class XuDpAccAdmmPaper(GradientPerturbation):
    """XU's DP-AccADMM as published."""

    accelerated: bool = True
    published: bool = True
    u0: str = "paper"
    id: ClassVar[str] = "xu_dpaccadmm_paper"


@dataclass
class OneRunCanaries:
    problems: list             # one FusedLasso per run (canary labels S[r])
    plus: fl.FusedLasso        # every canary labelled +1
    S: np.ndarray              # (R, k)
    coords: np.ndarray
    n: int


def one_run_canaries(X, y, *, rows: int, canaries: int, runs: int, lam: float, graph: dict,
                     rows_rng: np.random.Generator, signs_rng: np.random.Generator) -> OneRunCanaries:
    """`runs` fused lasso problems of `rows` records: rows - canaries clean rows (drawn by `rows_rng`, unit norm at
    most) and `canaries` rows e_j on the least used coordinates, labels S drawn by `signs_rng`; the feature graph
    is estimated once on the clean rows."""
    n, k, R = int(rows), int(canaries), int(runs)
    X = np.asarray(sp.csr_matrix(X).todense()) if sp.issparse(X) else np.asarray(X, float)
    idx = rows_rng.choice(len(y), size=n - k, replace=False)
    clean, yc = fl.normalise_rows(X[idx]), np.asarray(y, float)[idx]
    coords = least_used(clean, k)
    canary = np.zeros((k, X.shape[1]))
    canary[np.arange(k), coords] = 1.0
    g = fl.estimate_graph(clean, **graph_options(graph, clean.shape[1]))
    Xr = np.vstack([clean, canary])
    S = signs_rng.choice([-1.0, 1.0], size=(R, k))
    problems = [fl.build(Xr, np.concatenate([yc, S[r]]), lam, graph=g)[0] for r in range(R)]
    plus = fl.build(Xr, np.concatenate([yc, np.ones(k)]), lam, graph=g)[0]
    return OneRunCanaries(problems, plus, S, coords, n)


@dataclass
class WhiteBoxCanaries:
    problem: fl.FusedLasso     # the clean rows and `canaries` empty records (the same in every run)
    S: np.ndarray              # (R, k)
    coords: np.ndarray
    n: int


def white_box_canaries(X, y, *, rows: int, canaries: int, runs: int, lam: float, graph: dict,
                       rows_rng: np.random.Generator, signs_rng: np.random.Generator) -> WhiteBoxCanaries:
    """The canaries of `GradientPerturbation.one_run_white_box`: `rows - canaries` clean rows (drawn by `rows_rng`
    as in `one_run_canaries`), `canaries` empty records whose gradients the audit inserts (S c e_j / n), states S of
    `runs` runs drawn by `signs_rng`. Threat model: white-box, an adversary that can put any gradient of norm <= c
    into one record's place (what the sensitivity 2c/n assumes), not only gradients of unit-norm records."""
    n, k, R = int(rows), int(canaries), int(runs)
    X = np.asarray(sp.csr_matrix(X).todense()) if sp.issparse(X) else np.asarray(X, float)
    idx = rows_rng.choice(len(y), size=n - k, replace=False)
    clean, yc = fl.normalise_rows(X[idx]), np.asarray(y, float)[idx]
    coords = least_used(clean, k)
    g = fl.estimate_graph(clean, **graph_options(graph, clean.shape[1]))
    S = signs_rng.choice([-1.0, 1.0], size=(R, k))
    problem = fl.build(np.vstack([clean, np.zeros((k, X.shape[1]))]), np.concatenate([yc, np.ones(k)]), lam,
                       graph=g)[0]
    return WhiteBoxCanaries(problem, S, coords, n)
