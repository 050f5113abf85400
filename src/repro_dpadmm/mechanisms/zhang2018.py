"""ZHANG, KHALILI and LIU's private decentralised ADMM (ICML 2018: M-ADMM; Allerton 2018: R-ADMM) as mechanisms.

Every node i perturbs its local objective with noise of density ~ exp(-alpha_i(t) ||b||) (l2-Laplace, "Gamma-norm";
algorithms.decentralized), and each paper bounds node i's privacy loss per private iteration by a pure-DP budget:

* `PenaltyPerturbation`, ICML Algorithm 1: increasing penalty eta_i(t) = theta q_1^(t-1) and noise parameter
  alpha_i(t) = alpha q_2^(t-1) (ICML §5.2; docs/choices.md#zkl-pp-schedules), budget C (1.4 c_1 + alpha_i(t)) / (eta_i(t) V_i B_i) per
  iteration (Theorem 4.1, eq. (26)).
* `DualPerturbation`, ICML §4: the same with a constant penalty eta = theta (Zhang & Zhu's DVP).
* `PrivateRAdmm`, Allerton Algorithm 2: only odd iterations touch the data, budget
  (2C/B_i)(1.4 c_1 / (rho/N + 2 eta V_i) + alpha) per odd iteration (Theorem IV.1, eq. (30)).

The papers total these by summation, P(T) (`zhang2018.icml_P` / `zhang2018.allerton_P`); a sound tighter total is the
optimal composition of the worst node's per-iteration budgets (a record lives at one node, and only that node's
releases depend on it). The bounds have a part that no noise removes (the "1.4 c_1" Jacobian term) and only eta/C and
alpha matter, so a calibration to a total sets two parameters: the scale C, so that the noise-free part uses
`floor_share` of the target, then alpha (privacy.calibrate.pure_schedule).

The problem solved is C N (mean logistic loss + (lam/2)||f||^2) when rho = lam C N (eq. (1)).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..algorithms import decentralized as dz
from ..privacy import calibrate
from ..privacy.bounds import zhang2018 as zb
from ..privacy.spend import PAPER_BOUNDS, REPLACE_ONE, Spend, pure_steps, totals
from .base import FRONTIER, PURE, Mechanism
from .layouts import GRAPH


@dataclass(frozen=True, eq=False)
class _ZklMechanism(Mechanism):
    """Shared by the three: the network A (N x N), samples per node B (N,), the problem's lam, the calibration's
    floor_share and the local Newton tolerance."""

    A: np.ndarray | None = None
    B: np.ndarray | None = None
    lam: float = 1e-6
    floor_share: float = 0.5
    newton_tol: float = 1e-6

    kind: ClassVar[str] = PURE
    noise_name: ClassVar[str] = "alpha"
    spend_parameter: ClassVar[str] = "alpha"
    noiseless_needs_calibration: ClassVar[bool] = True   # the scale C is set per target
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER})
    layout: ClassVar = GRAPH

    @property
    def V(self) -> np.ndarray:
        return self.A.sum(1)

    @property
    def N(self) -> int:
        return self.A.shape[0]

    def schedules(self, T: int):
        """(per_step(C, alpha): the per-iteration pure-DP budget of every node, (steps, N); the paper's bound name
        and its arguments at (C, alpha); the run's schedules)."""
        raise NotImplementedError

    def spend(self, T: int, delta: float, C: float, alpha: float) -> Spend:
        """The worst node's per-iteration budgets (one node's are the largest at every step: the smallest V_i B_i),
        and the paper's P(T) for the same (C, alpha)."""
        per_step, (bound, args), _ = self.schedules(T)
        eps = per_step(C, alpha)
        return Spend(pure_steps(eps[:, int(np.argmax(eps.sum(0)))]), REPLACE_ONE, bound, args(C, alpha))

    def spend_noise(self, cal: dict) -> dict:
        return {"C": cal["C"], "alpha": cal["alpha"]}

    def fast_calibration(self, target: float, delta: float, T: int, *, rtol: float = 2e-3,
                         how: str = "optimal") -> dict:
        """C (the noise-free part of the bound at `floor_share` of the target, C <= min B_i), then alpha, so that the
        worst node's budgets compose (`how`) to `target` at `delta`. Its steps: the node whose budgets are the largest
        at every step (the spend records that node; none such: no fast path, `calibrate` searches alpha at this C)."""
        per_step, _, _ = self.schedules(T)
        cal = calibrate.pure_schedule(per_step, target, delta, how=how, floor_share=self.floor_share,
                                      C_max=float(self.B.min()), rtol=rtol)
        paper = totals(self.spend(T, delta, cal.C, cal.alpha), delta, pld=False)["paper_eps"]
        eps = per_step(cal.C, cal.alpha)
        top = eps[:, int(np.argmax(eps.sum(0)))]
        steps = (PURE, top) if np.all(eps <= top[:, None]) else None
        return {"noise": cal.alpha, "alpha": cal.alpha, "C": cal.C, "C_capped": cal.C_capped, "floor_eps": cal.floor,
                "tight_eps": cal.epsilon, "evaluations": cal.evaluations, "steps": steps,
                "accounting": f"{how} composition of the per-iteration pure-DP bound, worst node",
                "paper_eps": paper}

    def paper_total(self, T: int, C: float, alpha: float) -> float:
        """The paper's own total P(T) (the bound its Spend names) of T iterations at scale C and noise alpha."""
        _, (bound, args), _ = self.schedules(T)
        return float(PAPER_BOUNDS[bound](**args(C, alpha)))

    def match_noise(self, target: float, T: int, C: float) -> dict:
        """The alpha whose paper total P(T) at scale C is `target` (bounds.zhang2018.match_alpha: {alpha, P,
        reached, floor, reason}): how ZKL's comparisons put methods at the same P(T)."""
        return zb.match_alpha(lambda a: self.paper_total(T, C, a), target)

    def _check_parameter(self, C: float, rho: float, theta_min: float) -> None:
        # ICML Algorithm 1 / Allerton Algorithm 2 require 2 c_1 < (B_i / C)(rho/N + 2 theta V_i)
        if not np.all(2 * zb.C1 < (self.B / C) * (rho / self.N + 2 * theta_min * self.V)):
            raise ValueError(f"{self.label}: 2 c_1 < (B_i / C)(rho/N + 2 theta V_i) fails at C = {C:g}")

    def run(self, data: Iterable[dz.NodeData], cal: dict, T: int, rngs, *, noiseless: bool = False) -> np.ndarray:
        """Final models f_i(T) of every node, per repeat: (R, N, d), one run per repeat (each repeat's nodes hold
        their own split). `noiseless`: the same run (C, schedules) without the perturbation. Every node starts at
        f_i(0) = 0 [D]."""
        _, _, kw = self.schedules(T)
        C, alpha = float(cal["C"]), float(cal["alpha"])
        rho = self.lam * C * self.N     # so that eq. (1) is C N (mean loss + (lam/2)||f||^2)
        self._check_parameter(C, rho, float(np.min(kw.get("theta", kw["eta"]))))
        out = []
        for nodes, g in zip(data, rngs):
            f0 = np.zeros((1, self.N, nodes.dim))
            noise = {} if noiseless else {"rngs": [g]}
            out.append(self._solve(nodes, C, rho, None if noiseless else alpha, f0, kw, T, noise).meta["f_final"][0])
        return np.stack(out)

    def run_with_floor(self, data: Iterable[dz.NodeData], cals: Sequence[dict], T: int,
                       rngs: Sequence[Sequence[np.random.Generator]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """For every level l (its calibration cals[l] and noise Generators rngs[l], one per repeat): (`run(data,
        cals[l], T, rngs[l])`, `run(data, cals[l], T, rngs[l], noiseless=True)`), all as lanes of one run per repeat:
        level l's private run and its noise-free twin are lanes 2l and 2l + 1 of one solve with independent lanes
        (``decentralized.solve_local``: each lane its own C, rho, alpha, preconditioner, CG forcing and stop), the
        twins drawing no noise. The lanes share the nodes' rows and the schedules; each equals its own run bit for bit
        (tests/experiments/test_beyond_frontier.py); every array (R, N, d)."""
        _, _, kw = self.schedules(T)
        if len(cals) != len(rngs):
            raise ValueError(f"one list of Generators per calibration expected: {len(cals)} calibrations, "
                             f"{len(rngs)} lists")
        Cs = np.array([float(c["C"]) for c in cals])
        rhos = self.lam * Cs * self.N
        for C, rho in zip(Cs, rhos):
            self._check_parameter(C, rho, float(np.min(kw.get("theta", kw["eta"]))))
        lanes = np.repeat(np.arange(len(cals)), 2)    # the level of every lane: private, twin, private, twin, ...
        alphas = np.array([float(c["alpha"]) for c in cals])[lanes]
        out = []
        for r, nodes in enumerate(data):
            f0 = np.zeros((lanes.size, self.N, nodes.dim))
            draws = [g for level in rngs for g in (level[r], None)]
            out.append(self._solve(nodes, Cs[lanes], rhos[lanes], alphas, f0, kw, T, {"rngs": draws},
                                   independent_repeats=True).meta["f_final"])
        out = np.stack(out)   # (R, lanes, N, d)
        return [(out[:, 2 * k], out[:, 2 * k + 1]) for k in range(len(cals))]


@dataclass(frozen=True, eq=False)
class PenaltyPerturbation(_ZklMechanism):
    """Private M-ADMM by penalty perturbation (ICML Algorithm 1)."""

    theta: float = 0.5      # ICML §5.2
    q1: float = 1.05        # docs/choices.md#zkl-pp-schedules (blue)
    q2: float = 1.04
    eta1: float | None = None   # eta(1), the penalty's start (None: theta)

    paper: ClassVar[str] = "zhang2018_madmm"
    id: ClassVar[str] = "zhang_pp"
    parameters: ClassVar[dict] = {"pp.theta": "theta", "pp.q1": "q1", "pp.q2": "q2"}
    label: ClassVar[str] = "ZKL PP (M-ADMM)"
    noise_name: ClassVar[str] = "alpha1"     # alpha(1): the schedule is alpha(t) = alpha(1) q2^(t-1)
    release: ClassVar[str] = "Gamma-norm penalty perturbation, increasing penalty (ICML Alg. 1)"
    paper_accounting: ClassVar[str] = "P(T), ICML Thm 4.1 (sum over iterations)"

    def schedules(self, T: int):
        return self._madmm_schedules(T, self.theta, self.q1, self.q2, self.eta1)

    def _madmm_schedules(self, T: int, theta: float, q1: float, q2: float, eta1: float | None = None):
        eta = dz.geometric(theta if eta1 is None else eta1, q1, T)   # eta(t) = theta q1^(t-1) (ICML §5.2)
        shape = dz.geometric(1.0, q2, T)                    # alpha(t) = alpha(1) q2^(t-1)
        B, V = self.B, self.V
        return (lambda C, a: zb.icml_per_iteration(C, B, V, eta, a * shape),
                ("zhang2018.icml_P", lambda C, a: {"C": C, "B": B, "V": V, "eta": eta, "alpha": a * shape}),
                {"eta": eta, "theta": np.full(T, theta), "alpha_shape": shape})

    def _solve(self, nodes, C, rho, alpha, f0, kw, T, noise, **extra):
        """alpha: None, alpha(1), or one alpha(1) per lane (C and rho then per lane too)."""
        shape = kw["alpha_shape"]
        return dz.m_admm(nodes, self.A, C=C, rho=rho, eta=kw["eta"], theta=kw["theta"], f0=f0,
                         alpha=None if alpha is None else alpha * shape if np.ndim(alpha) == 0 else
                         [a * shape for a in alpha], tol=self.newton_tol, **noise, **extra)


@dataclass(frozen=True, eq=False)
class DualPerturbation(_ZklMechanism):
    """DVP (Zhang & Zhu 2017) as ICML §4 instantiates it: M-ADMM with eta_i(t) = theta = eta, constant alpha, i.e.
    penalty perturbation with q_1 = q_2 = 1."""

    eta: float = 0.5

    paper: ClassVar[str] = "zhang2018_madmm"
    id: ClassVar[str] = "zhang_dvp"
    parameters: ClassVar[dict] = {"dvp.eta": "eta"}
    label: ClassVar[str] = "ZKL DVP"
    release: ClassVar[str] = "Gamma-norm dual perturbation, constant penalty (ICML §4, eta = theta)"
    paper_accounting: ClassVar[str] = "P(T), ICML Thm 4.1 (sum over iterations)"

    def schedules(self, T: int):
        return PenaltyPerturbation._madmm_schedules(self, T, self.eta, 1.0, 1.0)

    _solve = PenaltyPerturbation._solve


@dataclass(frozen=True, eq=False)
class PrivateRAdmm(_ZklMechanism):
    """Private R-ADMM (Allerton Algorithm 2): objective perturbation at odd iterations, even ones recycle."""

    eta: float = 1.0        # Allerton §V-B
    gamma: float = 0.2

    paper: ClassVar[str] = "zhang2018_radmm"
    id: ClassVar[str] = "zhang_radmm"
    parameters: ClassVar[dict] = {"radmm.eta": "eta", "radmm.gamma": "gamma"}
    label: ClassVar[str] = "ZKL private R-ADMM"
    release: ClassVar[str] = "Gamma-norm objective perturbation at odd iterations (Allerton Alg. 2)"
    paper_accounting: ClassVar[str] = "P(T), Allerton Thm IV.1 (sum over odd iterations)"

    def schedules(self, T: int):
        B, V, lam, N, eta = self.B, self.V, self.lam, self.N, self.eta
        return (lambda C, a: zb.allerton_per_release(C, B, V, lam * C * N, eta, a, T),
                ("zhang2018.allerton_P",
                 lambda C, a: {"C": C, "B": B, "V": V, "rho": lam * C * N, "eta": eta, "alpha": a, "T": T}),
                {"eta": eta, "gamma": self.gamma})

    def _solve(self, nodes, C, rho, alpha, f0, kw, T, noise, **extra):
        """alpha: None, a number, or one per lane (C and rho then per lane too)."""
        return dz.r_admm(nodes, self.A, C=C, rho=rho, eta=kw["eta"], gamma=kw["gamma"], K=T // 2, f0=f0,
                         alpha=alpha if np.ndim(alpha) == 0 else list(alpha), tol=self.newton_tol, **noise, **extra)
