"""The methods of the equal-privacy frontier (beyond/frontier): how each is calibrated to a total epsilon and run.

Every method solves the same problem, l2-regularised logistic regression on Adult (mean loss + (lam/2)||w||^2,
lam = HUANG's lambda/n = 1e-6), on the same 40,000/5,222 split per repeat, under replace-one neighbours, and is
calibrated so that its TOTAL guarantee over all iterations meets the target (epsilon, delta):

* Gaussian mechanisms (HUANG DP-ADMM, PVP, DPSGD; XU DP-ADMM and DP-AccADMM corrected): the noise multiplier
  z = sigma / (replace-one l2-sensitivity) of T composed Gaussian steps, by dp-accounting's PLD accountant.
* Pure-DP mechanisms (HUANG DVP; ZKL PP, DVP, private R-ADMM): the paper's own per-iteration pure-epsilon bound,
  composed over the iterations by the optimal composition theorem (dp-accounting PLD of the (eps_t, 0)
  dominating pairs) or, with `pure_composition: basic`, by summation as the papers do (ZKL's P(T), T eps).
* XU "paper" variants: sigma from XU's Theorem 1 (sensitivity c/n, its single-order RDP conversion) and u_0 built
  from the exact gradient, exactly as the paper runs it; what they really spend is accounted as for the corrected
  runs, with the extra sensitivity u_0 adds (`u0_sensitivity_factors`).

For every method the job also records what the paper's own accounting says for the same noise (`paper_eps`), so the
table shows where the papers' accounting is looser (paper_eps > target) or unsound (XU: below the truth).

A method is a `Method` record plus two functions: `calibrate(method, target, ctx)` (pure: public sizes in, noise
parameters out) and `run(method, cal, data, ctx, rngs)` (final models of every agent, per repeat).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from .. import graphs
from ..algorithms import decentralized as dz
from ..algorithms import linearized as lin
from ..privacy import accounting, calibrate
from ..privacy.bounds import huang2019, xu2020
from ..privacy.bounds import zhang2018 as zb
from ..problems.fused_lasso import resolve_step_size
from ..problems.l2_logistic import L2Logistic


@dataclass(frozen=True)
class Method:
    id: str             # job and metric name, one word
    paper: str          # the paper it comes from
    label: str          # legend label
    family: str         # "huang" | "zhang" | "xu": which data layout it runs on
    mechanism: str      # what is perturbed, with which noise
    kind: str           # "gaussian" | "pure" | "xu_paper"
    noise_name: str     # name of the noise parameter the bisection sets
    paper_accounting: str  # how the paper itself accounts the total

    @property
    def calibrated(self) -> bool:
        """Its noise is set so that a sound accounting meets the level (all but the XU runs as published)."""
        return self.kind != "xu_paper"

    @property
    def noiseless_per_level(self) -> bool:
        """Whether its noise-free run still depends on the level: HUANG DP-ADMM's step sizes follow z, DVP's extra
        regulariser Delta follows its per-iteration eps, ZKL's scale C is set per level. (PVP, DPSGD and XU without
        noise are the same run at every level.)"""
        return self.id in ("huang_dpadmm", "huang_dvp") or self.family == "zhang"

    @property
    def has_noiseless(self) -> bool:
        """Whether the frontier runs its optimiser floor (the XU runs as published share the corrected runs')."""
        return self.kind != "xu_paper"

    @property
    def distributed(self) -> bool:
        """Each agent protects its own records (HUANG's star, ZKL's graph); XU's algorithms are centralised: one
        curator holds all 40,000 records, so its sensitivity is 100x smaller than an agent's with 400."""
        return self.family != "xu"


METHODS: dict[str, Method] = {m.id: m for m in (
    Method("huang_dpadmm", "huang2019_dpadmm", "HUANG DP-ADMM", "huang",
           "Gaussian output perturbation of the linearised step (Alg. 3)", "gaussian", "z",
           "moments accountant, classic conversion (SPEC §2.4)"),
    Method("huang_pvp", "huang2019_dpadmm", "HUANG PVP", "huang",
           "Gaussian primal variable perturbation of exact local solves (Alg. 2)", "gaussian", "z",
           "moments accountant, classic conversion (SPEC §2.4)"),
    Method("huang_dvp", "huang2019_dpadmm", "HUANG DVP", "huang",
           "Gamma-norm objective (dual) perturbation, pure eps per iteration (SPEC §2.2.4)", "pure",
           "eps_iter", "basic composition, T eps (SPEC §2.4)"),
    Method("huang_dpsgd", "huang2019_dpadmm", "HUANG DPSGD", "huang",
           "Gaussian noise on each agent's full-batch gradient (SPEC §2.2.5)", "gaussian", "z",
           "moments accountant, classic conversion (SPEC §2.4)"),
    Method("zhang_pp", "zhang2018_madmm", "ZKL PP (M-ADMM)", "zhang",
           "Gamma-norm penalty perturbation, increasing penalty (ICML Alg. 1)", "pure", "alpha1",
           "P(T), ICML Thm 4.1 (sum over iterations)"),
    Method("zhang_dvp", "zhang2018_madmm", "ZKL DVP", "zhang",
           "Gamma-norm dual perturbation, constant penalty (ICML §4, eta = theta)", "pure", "alpha",
           "P(T), ICML Thm 4.1 (sum over iterations)"),
    Method("zhang_radmm", "zhang2018_radmm", "ZKL private R-ADMM", "zhang",
           "Gamma-norm objective perturbation at odd iterations (Allerton Alg. 2)", "pure", "alpha",
           "P(T), Allerton Thm IV.1 (sum over odd iterations)"),
    Method("xu_dpadmm", "xu2020_dpaccadmm", "XU DP-ADMM (centralised)", "xu",
           "Gaussian gradient perturbation, linearised ADMM (Alg. 2), u_0 = 0", "gaussian", "z",
           "Theorem 1 (sensitivity c/n, one RDP order)"),
    Method("xu_dpaccadmm", "xu2020_dpaccadmm", "XU DP-AccADMM (centralised)", "xu",
           "Gaussian gradient perturbation, accelerated linearised ADMM (Alg. 3), u_0 = 0", "gaussian", "z",
           "Theorem 1 (sensitivity c/n, one RDP order)"),
    Method("xu_dpadmm_paper", "xu2020_dpaccadmm", "XU DP-ADMM as published (centralised)", "xu",
           "as XU DP-ADMM, with sigma from Theorem 1 (c/n) and u_0 from the exact gradient", "xu_paper", "sigma",
           "Theorem 1 (sensitivity c/n, one RDP order)"),
    Method("xu_dpaccadmm_paper", "xu2020_dpaccadmm", "XU DP-AccADMM as published (centralised)", "xu",
           "as XU DP-AccADMM, but sigma from Theorem 1 (c/n) and u_0 from the exact gradient", "xu_paper", "sigma",
           "Theorem 1 (sensitivity c/n, one RDP order)"),
)}


def level_key(epsilon: float) -> str:
    """Job and metric name of a privacy level: 0.1 -> 'eps0.1', 1.0 -> 'eps1'."""
    return f"eps{float(epsilon):g}"


# ------------------------------------------------------------------------------------------------- context
@dataclass(frozen=True)
class Context:
    """Everything a calibration needs (public: sizes, schedules, constants) and the run settings."""

    params: dict
    n_train: int            # training samples per repeat
    delta: float
    T: int                  # iterations of every method
    lam: float              # (lam/2)||w||^2 next to the mean loss
    zkl_A: np.ndarray       # ZKL network
    zkl_B: np.ndarray       # ZKL samples per node
    rtol: float

    @property
    def zkl_V(self) -> np.ndarray:
        return self.zkl_A.sum(1)


def context(params: dict) -> Context:
    n_train, T = int(params["n_train"]), int(params["iterations"])
    n_agents = int(params["huang"]["agents"])
    if n_train % n_agents:
        raise ValueError(f"HUANG's even split needs huang.agents to divide n_train: {n_train} samples over "
                         f"{n_agents} agents leaves {n_train % n_agents}")
    A = graphs.make_graph(params["zhang"]["graph"])
    B = np.array([len(p) for p in np.array_split(np.arange(n_train), A.shape[0])], dtype=float)
    return Context(params=params, n_train=n_train, delta=float(params["delta"]), T=T, lam=float(params["lam"]),
                   zkl_A=A, zkl_B=B, rtol=float(params.get("rtol", 2e-3)))


# ------------------------------------------------------------------------------------------------- calibration
def _zkl_schedules(method_id: str, ctx: Context):
    """(per_step(C, a): the method's per-iteration pure-DP bound per node, paper_P(C, a): the paper's total P(T),
    the schedules its run needs) for ZKL's PP, DVP or private R-ADMM."""
    z = ctx.params["zhang"]
    T, N = ctx.T, ctx.zkl_A.shape[0]
    B, V = ctx.zkl_B, ctx.zkl_V
    if method_id == "zhang_pp":
        theta, q1, q2 = float(z["pp"]["theta"]), float(z["pp"]["q1"]), float(z["pp"]["q2"])
        eta = dz.geometric(theta, q1, T)            # eta(t) = theta q1^(t-1) (ICML §5.2)
        shape = dz.geometric(1.0, q2, T)            # alpha(t) = alpha(1) q2^(t-1)
        return (lambda C, a: zb.icml_per_iteration(C, B, V, eta, a * shape),
                lambda C, a: zb.icml_P(C, B, V, eta, a * shape)[-1],
                {"eta": eta, "theta": np.full(T, theta), "alpha_shape": shape})
    if method_id == "zhang_dvp":
        eta = float(z["dvp"]["eta"])                # DVP: eta_i(t) = theta (ICML §4.5)
        return (lambda C, a: zb.icml_per_iteration(C, B, V, np.full(T, eta), np.full(T, a)),
                lambda C, a: zb.icml_P(C, B, V, np.full(T, eta), np.full(T, a))[-1],
                {"eta": np.full(T, eta), "theta": np.full(T, eta), "alpha_shape": np.ones(T)})
    if method_id == "zhang_radmm":
        eta, gamma = float(z["radmm"]["eta"]), float(z["radmm"]["gamma"])
        lam = ctx.lam
        return (lambda C, a: zb.allerton_per_release(C, B, V, lam * C * N, eta, a, T),
                lambda C, a: zb.allerton_P(C, B, V, lam * C * N, eta, a, T)[-1],
                {"eta": eta, "gamma": gamma})
    raise KeyError(method_id)


def _xu_paper_eps(sigma: float, ctx: Context) -> float:
    """The epsilon XU's Theorem 1 claims for noise `sigma` (its sensitivity c/n and RDP order alpha(epsilon))."""
    x = ctx.params["xu"]

    def gap(log_eps):
        return math.log(xu2020.sigma(math.exp(log_eps), ctx.T, ctx.n_train, ctx.delta, float(x["mu"]),
                                     float(x["c"]), 1.0)) - math.log(sigma)
    return math.exp(brentq(gap, math.log(1e-8), math.log(1e8), xtol=1e-12))


def xu_sensitivity(ctx: Context) -> float:
    """Replace-one l2-sensitivity of XU's mean gradient, 2c/n (c = 1 after unit-norm rows; the paper takes c/n).

    (HUANG's releases have sensitivities 2 c_1 / (m (rho + 1/eta_k)) (DP-ADMM), 2 c_1 / (m (lam + rho)) (PVP) and
    2 c_1 / m (DPSGD); their algorithms scale the noise themselves from the multiplier z.)"""
    return xu2020.sensitivity(ctx.n_train, float(ctx.params["xu"]["c"]), sensitivity_factor=2.0)


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


def calibrate_method(method_id: str, target: float, ctx: Context) -> dict:
    """The noise parameter(s) of one method at one target, and every accounting of the result (no data needed)."""
    m = METHODS[method_id]
    T, delta = ctx.T, ctx.delta
    how = ctx.params.get("pure_composition", "optimal")
    out = {"method": m.id, "target": float(target), "delta": delta, "steps": T, "noise_name": m.noise_name}
    if m.kind == "gaussian":
        cal = calibrate.gaussian_multiplier(target, delta, T, rtol=ctx.rtol)
        z = cal.value
        out.update(noise=z, z=z, tight_eps=cal.epsilon, evaluations=cal.evaluations,
                   accounting="dp-accounting PLD of T Gaussian steps (replace-one sensitivity)",
                   rdp_eps=accounting.rdp_epsilon(z, delta, steps=T))
        if m.family == "xu":
            sig = z * xu_sensitivity(ctx)
            out.update(sigma=sig, paper_eps=_xu_paper_eps(sig, ctx))
        else:
            out["paper_eps"] = huang2019.eps_bar(T=T, z=z, total_delta=delta)  # SPEC §2.4: classic MA, delta-bar
    elif m.kind == "xu_paper":
        x = ctx.params["xu"]
        sig = xu2020.sigma(target, T, ctx.n_train, delta, float(x["mu"]), float(x["c"]), 1.0)
        z = sig / xu_sensitivity(ctx)   # multiplier w.r.t. the replace-one sensitivity 2c/n
        factors = u0_sensitivity_factors(T, ctx.lam, float(x["rho"]), "dpacc" in m.id)
        out.update(noise=sig, sigma=sig, z=z, paper_eps=float(target), evaluations=0, u0_factor_max=factors.max(),
                   accounting="none: XU Theorem 1 as published (sensitivity c/n; u_0 from the exact gradient); the "
                              "true epsilon is the PLD of its T steps under replace-one, u_0 included",
                   tight_eps=accounting.pld_epsilon(z / factors, delta, discretization=accounting.pld_grid(target)),
                   rdp_eps=accounting.rdp_epsilon(z / factors, delta))
    elif m.id == "huang_dvp":
        cal = calibrate.pure_epsilon_step(target, delta, T, how=how, rtol=ctx.rtol)
        out.update(noise=cal.value, eps_iter=cal.value, tight_eps=cal.epsilon, evaluations=cal.evaluations,
                   accounting=f"{how} composition of T pure eps-DP iterations",
                   paper_eps=T * cal.value)
    elif m.family == "zhang":
        per_step, paper_P, _ = _zkl_schedules(m.id, ctx)
        floor_share = float(ctx.params["zhang"]["floor_share"])
        cal = calibrate.pure_schedule(per_step, target, delta, how=how, floor_share=floor_share,
                                      C_max=float(ctx.zkl_B.min()), rtol=ctx.rtol)
        out.update(noise=cal.alpha, alpha=cal.alpha, C=cal.C, C_capped=cal.C_capped, floor_eps=cal.floor,
                   tight_eps=cal.epsilon, evaluations=cal.evaluations,
                   accounting=f"{how} composition of the per-iteration pure-DP bound, worst node",
                   paper_eps=float(paper_P(cal.C, cal.alpha)))
    else:
        raise KeyError(method_id)
    out["calibrated"] = m.calibrated
    out["rel_gap"] = (target - out["tight_eps"]) / target
    return out


# ------------------------------------------------------------------------------------------------- runs
def run_zhang(method_id: str, cal: dict, splits, X, y, ctx: Context, rngs, noiseless: bool = False) -> np.ndarray:
    """Final models f_i(T) of every node, per repeat: (R, N, d). One run per repeat (each has its own split).
    `noiseless`: the same run (C, schedules) without the perturbation (the method's optimiser floor)."""
    z = ctx.params["zhang"]
    _, _, kw = _zkl_schedules(method_id, ctx)
    A, N, T = ctx.zkl_A, ctx.zkl_A.shape[0], ctx.T
    C, alpha = float(cal["C"]), float(cal["alpha"])
    rho = ctx.lam * C * N     # ZKL's rho so that eq. (1) is C N (mean loss + (lam/2)||f||^2)
    B, V = ctx.zkl_B, ctx.zkl_V
    theta_min = float(np.min(kw.get("theta", kw["eta"])))
    if not np.all(2 * zb.C1 < (B / C) * (rho / N + 2 * theta_min * V)):  # ICML Alg. 1 / Allerton Alg. 2 parameter
        raise ValueError(f"{method_id}: 2 c_1 < (B_i / C)(rho/N + 2 theta V_i) fails at C = {C:g}")
    tol = float(z.get("newton_tol", 1e-6))
    out = []
    for r, (tr, _) in enumerate(splits):
        parts = graphs.split_data(len(tr), N, rngs["agents"][r])
        data = dz.node_data(X[tr], y[tr], parts)
        f0 = np.zeros((1, N, X.shape[1]))   # common start for every method [D]
        noise = {} if noiseless else {"rngs": [rngs["noise"][r]]}
        if method_id == "zhang_radmm":
            h = dz.r_admm(data, A, C=C, rho=rho, eta=kw["eta"], gamma=kw["gamma"], K=T // 2, f0=f0,
                          alpha=None if noiseless else alpha, tol=tol, **noise)
        else:
            h = dz.m_admm(data, A, C=C, rho=rho, eta=kw["eta"], theta=kw["theta"], f0=f0,
                          alpha=None if noiseless else alpha * kw["alpha_shape"], tol=tol, **noise)
        out.append(h.meta["f_final"][0])
    return np.stack(out)


def run_xu(method_id: str, cal: dict | None, splits, X, y, ctx: Context, rngs, noiseless: bool = False) -> np.ndarray:
    """Final x_T per repeat: (R, 1, d) (one model: XU's algorithms are centralised). `noiseless`: sigma = 0."""
    x = ctx.params["xu"]
    accelerated = "dpaccadmm" in method_id
    u0 = "paper" if METHODS[method_id].kind == "xu_paper" else "zero"
    out = []
    for r, (tr, _) in enumerate(splits):
        problem = L2Logistic(X=sp.csr_matrix(X[tr]), y=y[tr], lam=ctx.lam)
        rho = float(x["rho"])
        eta, _ = resolve_step_size(x, "adult_huang2019", problem)  # "auto": 1/(L_f + rho), XU's rule (SPEC §6.6)
        sigma = 0.0 if noiseless else float(cal["sigma"])
        res = lin.run(problem, T=ctx.T, eta=eta, rho=rho, gamma=float(x["gamma"]), sigma=sigma,
                      accelerated=accelerated, repeats=1, rngs=[rngs["noise"][r]], u0=u0)
        out.append(res.x_T)
    return np.stack(out)


def star_from_splits(X, y, splits, n_agents: int, agent_rngs):
    """HUANG's StarData (one data draw per repeat) from the frontier's shared splits, each repeat's training rows
    partitioned evenly over n_agents by its own generator. (consensus.split_star draws its own split; this is the
    same construction from given indices.)"""
    from ..algorithms import consensus
    from ..datasets import partition

    rows = [tr[partition.even(len(tr), n_agents, g)] for (tr, _), g in zip(splits, agent_rngs)]
    return consensus.star_from_rows(X, y, np.stack(rows), np.stack([te for _, te in splits]))


def run_huang(method_id: str, cal: dict | None, splits, X, y, ctx: Context, rngs,
              noiseless: bool = False) -> np.ndarray:
    """Final shared models of every agent, all repeats at once: (R, n, d) (DPSGD: (R, 1, d), one model).
    `noiseless`: the same method without its noise (the optimiser floor): DP-ADMM keeps the level's step sizes, DVP
    its extra regulariser Delta (with b = 0 its local solve is ADMM's with lambda/n + Delta)."""
    from ..algorithms import consensus, sgd

    h = ctx.params["huang"]
    data = star_from_splits(X, y, splits, int(h["agents"]), rngs["agents"])
    common = {"T": ctx.T, "rngs": rngs["noise"], "rho": float(h["rho"]), "lam_n": ctx.lam, "record": False}
    if method_id == "huang_dpadmm":
        return consensus.dpadmm(data, reg="l2", noise_multiplier=cal["z"], add_noise=not noiseless,
                                **common).meta["w_tilde"]
    if method_id == "huang_pvp":
        noise = {"sigma": 0.0} if noiseless else {"noise_multiplier": cal["z"]}
        return consensus.pvp(data, **noise, **common).meta["w_tilde"]
    if method_id == "huang_dvp":
        if noiseless:
            Delta = huang2019.dvp_calibration(cal["eps_iter"], data.m, ctx.lam, float(h["rho"]))["Delta"]
            return consensus.admm(data, reg="l2", T=ctx.T, rho=float(h["rho"]), lam_n=ctx.lam + Delta,
                                  repeats=data.D, record=False).meta["w_tilde"]
        return consensus.dvp(data, epsilon=cal["eps_iter"], **common).meta["w_tilde"]
    if method_id == "huang_dpsgd":
        noise = {"sigma_value": 0.0} if noiseless else {"noise_multiplier": cal["z"]}
        run = sgd.dpsgd(data, reg="l2", lr=float(h["dpsgd"]["lr"]), convention=h["dpsgd"]["convention"], **noise,
                        **common)
        return run.meta["w"][:, None, :]
    raise KeyError(method_id)
