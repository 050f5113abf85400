"""HUANG et al., "DP-ADMM: ADMM-Based Distributed Learning With Differential Privacy" (IEEE TIFS 2019): the private
step of Algorithm 3 and of the paper's private baselines, as mechanisms on the star network.

* `DpAdmm`, Algorithm 3: agent i releases w~_i^k = w_i^k + N(0, sigma_{i,k}^2 I) (eq. (10b)) with
  sigma_{i,k} = z Delta_{i,k}, Delta_{i,k} = 2 c_1 / (m_i (rho + 1/eta_i^k)) (Lemma 1, eq. (11)) and
  z = sqrt(2 ln(1.25/delta)) / eps (Theorem 1, eq. (14)); the step sizes eta_i^k (Theorem 3 (29) / 4 (34)) follow
  the same z, so its noise-free run depends on the calibration too.
* `Pvp`, Algorithm 2 (baseline (3)): primal variable perturbation of exact local solves, sigma_i = z 2 c_1 /
  ((lambda/n + rho) m_i) (§III-A).
* `Dvp`, baseline (4) (docs/choices.md#huang-dvp [D]): dual variable perturbation, pure eps per iteration (Chaudhuri et al.'s
  objective perturbation with n -> m_i); without noise it is ADMM with the extra regulariser Delta of that eps.
* `DpSgd`, baseline (5) ([D]): each agent's clipped mean gradient plus N(0, sigma^2 I), sigma = 2 C z / m_i;
  the sum convention (the reading in which §VI-C's "optimal learning rate 0.1" is nearest the optimum, algorithms.sgd).

`DpAdmm` and `DpSgd` have a learning rate (eta_i^k, lr): `step_scale` multiplies it (1: the paper's), so that a
comparison can tune every method's step by one rule (experiments.beyond_frontier); the privacy of a release does not
depend on it (z is fixed; DP-ADMM's sigma_{i,k} follows eta_i^k through Lemma 1's sensitivity).

Every Gaussian one is accounted as T releases with noise multiplier z under replace-one (its Spend); the paper's own
total is the moments accountant with the classic conversion (§IV-C, docs/choices.md#huang-total-privacy: `huang2019.eps_bar`), DVP's is T eps.

Audits. `DpAdmm.audit_case` / `DpSgd.audit_case`: one iteration (one step) of the library's own code from a
gradient canary's state (privacy.audit.canaries), agent 1 holding the canary's dataset. `one_run_canaries` and
`*.one_run_scores`: the whole-run (one-run) audit. Canary slot l of agent i holds the record (r e_j, S), e_j one of
the k coordinates the clean data uses least, label S = +1 / -1: the per-example logistic gradients of the two states
differ by exactly r e_j at every state w (sigma(t) + sigma(-t) = 1), so a canary's effect does not depend on the
state. r = 1 for DP-ADMM (gap 1, half the replace-one bound 2 c_1: the most any pair reaches from w = 0); for DPSGD
r = 5, whose per-example clipping at C = c_1 then clips both gradients to norm 1 while |w_j| <= ln(r - 1)/r, so the
gap is the full bound 2C. The adversary knows the clean data, the algorithm and every public value, not S: for
each released iterate it subtracts the library's own noise-free update on the data with every canary labelled +1;
the residual's coordinate e_j, summed over the T iterations, is canary j's score (the likelihood-ratio statistic of
the composed Gaussian).

White-box canaries (`white_box_canaries`, `*.one_run_white_box`; Nasr et al. 2023's gradient canaries, Dirac canaries:
all of a canary's gradient on one coordinate). The record-level canaries above are a black-box threat model: any
adversary who can contribute a record. From a state it does not choose, a unit-norm record's gradient changes by at
most about 1 between label states, half the replace-one bound 2 c_1 of Lemma 1 (DPSGD's clipping trick aside). The
white-box canary is inserted where the sensitivity is taken: a record's gradient S c_1 e_j in the agent's mean
gradient, so the released w-tilde_i^k (DP-ADMM) or message g-tilde_i^k (DPSGD) of the two states differ by exactly
the bound at every iteration. A violation under the black-box model would mean real records leak more than
claimed; under the white-box model, that the noise is too small for the sensitivity the proof claims (a
calibration error), even if no real record reaches the bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from ..algorithms import consensus as cs
from ..algorithms import sgd
from ..privacy import accounting, calibrate
from ..privacy.audit.canaries import GradientCanary, canary_rows, least_used
from ..privacy.audit.trials import AuditCase
from ..privacy.bounds import huang2019 as hb
from ..privacy.spend import Spend, totals
from ..rng import stacked_normal
from .base import AUDIT, AUDIT_RUN, FRONTIER, PURE, Claim, GaussianMechanism, Mechanism, OneRun, RecordCanaryAudit
from .layouts import STAR

PAPER = "huang2019_dpadmm"
ACCOUNTING = "moments accountant, classic conversion (docs/choices.md#huang-total-privacy)"


class _HuangGaussian(GaussianMechanism):
    """A HUANG release with Gaussian noise of multiplier z: Theorem 1's calibration, accounted as T Gaussian
    releases (replace-one), the paper's total by the moments accountant (`huang2019.eps_bar`, delta-bar = delta)."""

    paper: ClassVar[str] = PAPER
    paper_accounting: ClassVar[str] = ACCOUNTING
    layout: ClassVar = STAR

    def paper_noise(self, epsilon: float, delta: float) -> float:
        """z = sqrt(2 ln(1.25/delta)) / epsilon (Theorem 1, eq. (14)): (epsilon, delta) per iteration."""
        return hb.noise_multiplier(epsilon, delta)

    def spend(self, T: int, delta: float, z: float) -> Spend:
        return hb.gaussian_spend(z, T, delta)

    def claim(self, z: float, delta: float, T: int) -> Claim:
        """T releases with multiplier z: the paper's total (moments accountant) and the exact one (analytic
        Gaussian of the composition), both at `delta`."""
        paper = totals(self.spend(T, delta, z=z), delta, pld=False)["paper_eps"]
        return Claim(delta, z, paper, accounting.analytic_gaussian_epsilon(z, delta, steps=int(T)))

    def paper_claim(self, epsilon: float, delta: float, T: int) -> Claim:
        """Theorem 1's noise for (epsilon, delta) per iteration, run T iterations."""
        return self.claim(self.paper_noise(epsilon, delta), delta, T)

    def level_claim(self, level: float, delta: float, T: int) -> Claim:
        """The z whose T releases total exactly `level` at `delta` (analytic Gaussian, no PLD discretisation)."""
        return self.claim(calibrate.gaussian_multiplier_exact(level, delta, T).value, delta, T)


class _HuangAudited(RecordCanaryAudit):
    """HUANG's audited methods: the one-step audit's constants from the `huang2019` block, the whole-run audit's from
    its own `huang2019` block (agents, rows per agent, canaries per agent, runs)."""

    audit_run_block: ClassVar[str] = "huang2019"
    audit_run_dataset: ClassVar[str] = "adult_huang2019"
    canary_norm_key: ClassVar[str | None] = None      # the audit_run config key of the canary norm (None: 1)
    signs_label: ClassVar[str] = ""

    @staticmethod
    def _common(hp: dict) -> dict:
        return {"reg": hp["reg"], "rho": float(hp["rho"]), "lam_n": float(hp["lam_n"])}

    def claim_kwargs(self, setup, params: dict) -> tuple[dict | None, dict | None]:
        """Extra keywords of `paper_claim` and `level_claim` (none)."""
        return None, None

    def one_run_setup(self, X, y, params: dict, rng_of) -> OneRunCanaries:
        """The whole-run audit's datasets with canaries (`one_run_canaries`) from its block (`huang2019`)."""
        hp = params[self.audit_run_block]
        norm = float(hp.get(self.canary_norm_key, 5.0)) if self.canary_norm_key else 1.0
        return one_run_canaries(X, y, agents=hp["agents"], rows_per_agent=hp["rows_per_agent"],
                                canaries=hp["canaries_per_agent"], runs=hp["runs"], canary_norm=norm,
                                rows_rng=rng_of("huang-rows"), signs_rng=rng_of(self.signs_label, "signs"))

    def white_box_setup(self, X, y, params: dict, rng_of) -> OneRunCanaries:
        """The whole-run audit's white-box canaries (`white_box_canaries`) from its block's `white_box` entry."""
        hp = params[self.audit_run_block]
        wb = hp["white_box"]
        return white_box_canaries(X, y, agents=hp["agents"], rows_per_agent=hp["rows_per_agent"],
                                  canaries=wb["canaries_per_agent"], runs=wb["runs"], rows_rng=rng_of("huang-rows"),
                                  signs_rng=rng_of(self.id + "_wb", "signs"))


@dataclass(frozen=True)
class DpAdmm(_HuangAudited, _HuangGaussian):
    """Algorithm 3 on the star network (algorithms.consensus.dpadmm): the released value is each agent's w~_i^k."""

    reg: str = "l2"
    rho: float = 0.1               # §VI-C
    lam_n: float = 1e-6            # lambda / n, §VI-C
    step_scale: float = 1.0        # multiplies the step sizes eta_i^k of Theorem 3 / 4

    id: ClassVar[str] = "huang_dpadmm"
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER, AUDIT, AUDIT_RUN})
    audit_kind: ClassVar[str] = "huang2019_dpadmm"
    signs_label: ClassVar[str] = "dpadmm"
    label: ClassVar[str] = "HUANG DP-ADMM"
    release: ClassVar[str] = "Gaussian output perturbation of the linearised step (Alg. 3)"
    noiseless_needs_calibration: ClassVar[bool] = True   # the step sizes eta_i^k follow z
    step_name: ClassVar[str] = "eta_i^k of Theorem 4 (eq. (34))"

    def run(self, data: cs.StarData, cal: dict | None, T: int, rngs: Sequence[np.random.Generator], *,
            noiseless: bool = False) -> np.ndarray:
        """Every agent's final w~_i^T, all repeats: (R, n, d). `noiseless`: the same step sizes, no noise."""
        eta = None if self.step_scale == 1.0 else self.step_scale * hb.eta_schedule(
            self.reg, T, data.m, z=cal["z"], lam_n=self.lam_n, d=data.d)
        return cs.dpadmm(data, reg=self.reg, noise_multiplier=cal["z"], add_noise=not noiseless, T=T, rngs=rngs,
                         rho=self.rho, lam_n=self.lam_n, eta=eta, record=False).meta["w_tilde"]

    def run_lanes(self, data: cs.StarData, cal: dict | None, T: int, rngs: Sequence[np.random.Generator],
                  scales, *, noiseless: bool = False) -> np.ndarray:
        """`run` at each step multiple of `scales` (eta_i^k x scale, Theorem 4's (34)), as lanes of one run
        (``consensus.dpadmm_lanes``: the same data sweep and noise draws for every lane): (L, R, n, d), lane l equal
        bit for bit to ``replace(self, step_scale=scales[l]).run(...)`` with fresh Generators of the same seeds."""
        base = hb.eta_schedule(self.reg, T, data.m, z=cal["z"], lam_n=self.lam_n, d=data.d)
        etas = np.asarray(scales, dtype=float).reshape(-1, *([1] * base.ndim)) * base   # x 1.0 leaves eta as it is
        return cs.dpadmm_lanes(data, reg=self.reg, T=T, rngs=rngs, noise_multiplier=cal["z"], etas=etas,
                               rho=self.rho, lam_n=self.lam_n, add_noise=not noiseless)

    @classmethod
    def audited(cls, params: dict, mech: dict, canary: GradientCanary) -> AuditCase:
        """The one-step audit's case: the mechanism with the audit's `huang2019` constants at the claimed epsilon."""
        hp = params["huang2019"]
        return cls(**cls._common(hp)).audit_case(canary, float(mech["epsilon"]), float(params["delta"]),
                                                 int(hp.get("agents", 1)))

    @classmethod
    def for_audit_run(cls, params: dict) -> DpAdmm:
        return cls(**cls._common(params[cls.audit_run_block]))

    def audit_case(self, canary: GradientCanary, epsilon: float, delta: float, agents: int = 1) -> AuditCase:
        """Iteration k = 1 of Algorithm 3 (T = 1) from w~^0 = w^0 = the canary state, gamma^0 = 0. Claimed: Theorem 1
        at (epsilon, delta) (sigma_{i,1} of eq. (14), eta_i^1 of Theorem 3/4 from the same (epsilon, delta)); the
        control keeps that eta and scales the noise multiplier. Released: agent 1's w~_1^1."""
        eps, delta = float(epsilon), float(delta)
        data = star_pair(canary, agents)
        m = data[0].m
        eta = hb.eta_schedule(self.reg, 1, m, eps, delta)
        z = hb.noise_multiplier(eps, delta)
        init = {"w_tilde": canary.state, "w": canary.state}
        common = {"reg": self.reg, "T": 1, "rho": self.rho, "lam_n": self.lam_n, "record": False, "init": init}

        def step(b: int, noise_factor: float, rngs: Sequence) -> np.ndarray:
            noise = {"epsilon": eps, "delta": delta} if noise_factor == 1.0 else \
                {"noise_multiplier": z * noise_factor, "eta": eta}
            return cs.dpadmm(data[b], rngs=rngs, **common, **noise).meta["w_tilde"][:, 0, :]

        free = [cs.dpadmm(data[b], noise_multiplier=z, eta=eta, add_noise=False, **common).meta["w_local"][0, 0]
                for b in (0, 1)]
        sens = float(hb.sensitivity(m, self.rho, eta[0]))
        return AuditCase(
            label=f"{self.label} iteration", paper=self.paper, epsilon=eps, delta=delta,
            sigma=float(hb.sigma(m, self.rho, eta[0], eps, delta)), sensitivity=sens, paper_sensitivity=sens,
            pair_distance=float(np.linalg.norm(free[1] - free[0])), step=step,
            neighbours=f"replace-one record ({m - 1} rows + canary)",
            notes=[f"m = {m}, {self.reg}, rho = {self.rho:g}, lambda/n = {self.lam_n:g}, eta_1 = {float(eta[0]):.4g} "
                   f"(Theorem {3 if self.reg == 'l1' else 4}), z = {z:.4g}"])

    def one_run(self, st: OneRunCanaries, T: int, z: float, factor: float, rngs) -> OneRun:
        """Scores (R, n, k) of T iterations run one call at a time (w-tilde_i^k, w^k, gamma_i^k public); the noise
        is z x `factor` with the step sizes of the claimed z (Theorem 4, eq. (34)). The unit canary's per-step gap
        is 1/(m(rho + 1/eta)) against sigma = 2 z / (m(rho + 1/eta)): multiplier 2 z x factor."""
        eta = hb.eta_schedule(self.reg, T, st.m, z=z, lam_n=self.lam_n, d=st.data.d)
        R, n, k = st.S.shape
        state = {"w_tilde": np.zeros((R, n, st.data.d)), "w": np.zeros((R, st.data.d)),
                 "gamma": np.zeros((R, n, st.data.d))}
        score = np.zeros((R, n, k))
        for t in range(T):
            h = cs.dpadmm(st.data, reg=self.reg, T=1, rngs=rngs, noise_multiplier=z * factor, eta=eta[t:t + 1],
                          rho=self.rho, lam_n=self.lam_n, record=False, init=state)
            pred = cs.dpadmm_primal_update(st.plus, state["w_tilde"], state["w"], state["gamma"], eta[t],
                                           rho=self.rho, lam_n=self.lam_n, reg=self.reg)
            # residual m (rho + 1/eta) (w-tilde - pred): N(0, (2 c_1 z)^2) + (-1 on e_j if S = -1)
            score += (h.meta["w_tilde"] - pred)[..., st.coords] * (st.m * (self.rho + 1.0 / eta[t]))
            state = {"w_tilde": h.meta["w_tilde"], "w": h.meta["w"], "gamma": h.meta["gamma"]}
        return OneRun(score, 2.0 * z * factor, {})

    def one_run_white_box(self, st: OneRunCanaries, T: int, z: float, factor: float, rngs) -> OneRun:
        """White-box canaries (`white_box_canaries`): canary slot l of agent i contributes the gradient
        S c_1 e_j (norm c_1, Lemma 1's bound on a record's gradient) to the agent's mean gradient in (12a), so the
        two states move w_i^k by 2 c_1 / (m (rho + 1/eta)): Lemma 1's sensitivity (11) exactly, at every k. The
        loop is `consensus.dpadmm`'s, from its public single-step parts (the same draws); the adversary predicts each
        w_i^k from the public w-tilde, w, gamma with the canaries' gradients left out, and the residual on e_j,
        scaled by m (rho + 1/eta_k) / c_1, is S + N(0, (2 z factor)^2): multiplier z x factor."""
        eta = hb.eta_schedule(self.reg, T, st.m, z=z, lam_n=self.lam_n, d=st.data.d)
        sig = hb.sigma(st.m, self.rho, eta, z=z * factor)
        R, n, k = st.S.shape
        d = st.data.d
        insert = np.zeros((R, n, d))
        insert[..., st.coords] = st.S * (hb.C1 / st.m)
        w_tilde, w, gamma = np.zeros((R, n, d)), np.zeros((R, d)), np.zeros((R, n, d))
        score = np.zeros((R, n, k))
        for t in range(T):
            g = cs.dpadmm_local_gradient(st.data, w_tilde, self.reg, self.lam_n)   # canary slots hold zero rows
            pred = cs.dpadmm_primal(g, w_tilde, w, gamma, eta[t], self.rho)
            w_local = cs.dpadmm_primal(g + insert, w_tilde, w, gamma, eta[t], self.rho)     # (10a)
            w_tilde = w_local + stacked_normal(rngs, (n, d), sig[t])                          # (10b)
            w_new = cs.aggregate(w_tilde, gamma, self.rho)                                    # (10c)
            gamma = cs.dual_update(gamma, w_tilde, w_new, self.rho)                           # (10d)
            w = w_new
            score += (pred - w_tilde)[..., st.coords] * (st.m * (self.rho + 1.0 / eta[t]) / hb.C1)
        return OneRun(score, z * factor, {})


@dataclass(frozen=True)
class Pvp(_HuangGaussian):
    """Algorithm 2 (algorithms.consensus.pvp, l2 only): the released value is w_i^k + N(0, sigma_i^2 I)."""

    rho: float = 0.1
    lam_n: float = 1e-6

    id: ClassVar[str] = "huang_pvp"
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER})
    label: ClassVar[str] = "HUANG PVP"
    release: ClassVar[str] = "Gaussian primal variable perturbation of exact local solves (Alg. 2)"

    def run(self, data: cs.StarData, cal: dict | None, T: int, rngs, *, noiseless: bool = False) -> np.ndarray:
        """Every agent's final shared model, all repeats: (R, n, d)."""
        noise = {"sigma": 0.0} if noiseless else {"noise_multiplier": cal["z"]}
        return cs.pvp(data, **noise, T=T, rngs=rngs, rho=self.rho, lam_n=self.lam_n, record=False).meta["w_tilde"]


@dataclass(frozen=True)
class DpSgd(_HuangAudited, _HuangGaussian):
    """Distributed DPSGD (algorithms.sgd.dpsgd): each agent's message g~_i = g_i + N(0, sigma^2 I) is the release."""

    reg: str = "l2"
    rho: float = 0.1               # enters only the AOV trace (the consensus penalty is 0)
    lam_n: float = 1e-6
    lr: float = 0.1                # §VI-C
    convention: str = "sum"        # [D] where lr 0.1 is (near-)optimal (algorithms.sgd)
    step_scale: float = 1.0        # multiplies lr

    id: ClassVar[str] = "huang_dpsgd"
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER, AUDIT, AUDIT_RUN})
    parameters: ClassVar[dict] = {"dpsgd.lr": "lr", "dpsgd.convention": "convention"}
    audit_kind: ClassVar[str] = "huang2019_dpsgd"
    canary_norm_key: ClassVar[str] = "dpsgd_canary_norm"
    signs_label: ClassVar[str] = "dpsgd"
    label: ClassVar[str] = "HUANG DPSGD"
    release: ClassVar[str] = "Gaussian noise on each agent's full-batch gradient (docs/choices.md#huang-dpsgd)"
    step_name: ClassVar[str] = "learning rate (§VI-C)"

    def run(self, data: cs.StarData, cal: dict | None, T: int, rngs, *, noiseless: bool = False) -> np.ndarray:
        """The final model w^T, all repeats: (R, 1, d) (one model: every agent holds w^k)."""
        noise = {"sigma_value": 0.0} if noiseless else {"noise_multiplier": cal["z"]}
        h = sgd.dpsgd(data, reg=self.reg, lr=self.lr * self.step_scale, convention=self.convention, **noise, T=T,
                      rngs=rngs, rho=self.rho, lam_n=self.lam_n, record=False)
        return h.meta["w"][:, None, :]

    def run_lanes(self, data: cs.StarData, cal: dict | None, T: int, rngs, scales, *,
                  noiseless: bool = False) -> np.ndarray:
        """`run` at each multiple of `scales` of lr, as lanes of one run (``sgd.dpsgd_lanes``: the same data sweep
        and noise draws for every lane): (L, R, 1, d), lane l equal bit for bit to
        ``replace(self, step_scale=scales[l]).run(...)`` with fresh Generators of the same seeds."""
        noise = {"sigma_value": 0.0} if noiseless else {"noise_multiplier": cal["z"]}
        w = sgd.dpsgd_lanes(data, reg=self.reg, T=T, rngs=rngs, lrs=[self.lr * float(s) for s in scales],
                            convention=self.convention, lam_n=self.lam_n, **noise)
        return w[:, :, None, :]

    @classmethod
    def audited(cls, params: dict, mech: dict, canary: GradientCanary) -> AuditCase:
        """The one-step audit's case: the mechanism with the audit's `huang2019` constants at the claimed epsilon."""
        hp = params["huang2019"]
        return cls(**cls._common(hp), lr=float(hp.get("lr", 0.1))).audit_case(canary, float(mech["epsilon"]),
                                                                              float(params["delta"]))

    @classmethod
    def for_audit_run(cls, params: dict) -> DpSgd:
        hp = params[cls.audit_run_block]
        return cls(**cls._common(hp), lr=float(hp.get("lr", 0.1)), convention=hp.get("dpsgd_convention", "average"))

    def audit_case(self, canary: GradientCanary, epsilon: float, delta: float) -> AuditCase:
        """One step (T = 1) from w^0 = the canary state with one agent: w^1 = w^0 - lr (g~ + (lambda/n) R'(w^0)) is
        an invertible affine image of the agent's message g~ = g + N(0, sigma^2 I), so auditing w^1 audits the
        message. Claimed: sigma = 2 c_1 z / m (docs/choices.md#huang-dpsgd); the control passes the library's sigma x factor."""
        eps, delta = float(epsilon), float(delta)
        data = star_pair(canary, 1)
        m = data[0].m
        sig = float(sgd.sigma(m, eps, delta))
        common = {"reg": self.reg, "T": 1, "lr": self.lr, "convention": self.convention, "rho": self.rho,
                  "lam_n": self.lam_n, "record": False, "init": canary.state}

        def step(b: int, noise_factor: float, rngs: Sequence) -> np.ndarray:
            noise = {"epsilon": eps, "delta": delta} if noise_factor == 1.0 else {"sigma_value": sig * noise_factor}
            return sgd.dpsgd(data[b], rngs=rngs, **common, **noise).meta["w"]

        g = [sgd.local_gradients(data[b], canary.state[None, :])[0, 0] for b in (0, 1)]
        return AuditCase(
            label=f"{self.label} step", paper=self.paper, epsilon=eps, delta=delta, sigma=sig,
            sensitivity=2.0 * hb.C1 / m, paper_sensitivity=2.0 * hb.C1 / m,
            pair_distance=float(np.linalg.norm(g[1] - g[0])), step=step,
            neighbours=f"replace-one record ({m - 1} rows + canary)",
            notes=[f"m = {m}, lr = {self.lr:g}, clip C = c_1 = 1 (a no-op for unit-norm rows), one agent"])

    def one_run(self, st: OneRunCanaries, T: int, z: float, factor: float, rngs) -> OneRun:
        """Scores (R, n, k); the adversary sees every agent's message g-tilde_i^k (and so w^k). The loop is
        `sgd.dpsgd`'s, from its public single-step parts, to keep the messages (same draws, tested). The clipped
        canary's per-step gap is 2/m against sigma = 2 z / m: multiplier z x factor."""
        s = float(sgd.sigma(st.m, z=z)) * factor
        R, n, k = st.S.shape
        w = np.zeros((R, st.data.d))
        score = np.zeros((R, n, k))
        for _ in range(T):
            g_tilde = sgd.local_gradients(st.data, w) + stacked_normal(rngs, (n, st.data.d), s)
            score += (g_tilde - sgd.local_gradients(st.plus, w))[..., st.coords] * (st.m / 2.0)
            w = sgd.update(w, g_tilde, lr=self.lr, lam_n=self.lam_n, reg=self.reg, convention=self.convention)
        # the clipped gap is -2 e_j / m for S = -1: higher score, more likely +1
        return OneRun(-score, z * factor, {})

    def one_run_white_box(self, st: OneRunCanaries, T: int, z: float, factor: float, rngs) -> OneRun:
        """White-box canaries (`white_box_canaries`): canary slot l of agent i adds its clipped gradient S C e_j
        (norm C = c_1, whatever the state) to the agent's mean gradient, a gap of 2C/m between the states, the
        sensitivity of the message; the adversary subtracts the message's noise-free part without the canaries.
        Residual x m / C: S + N(0, (2 z factor)^2), multiplier z x factor."""
        s = float(sgd.sigma(st.m, z=z)) * factor
        R, n, k = st.S.shape
        d = st.data.d
        insert = np.zeros((R, n, d))
        insert[..., st.coords] = st.S * (hb.C1 / st.m)
        w = np.zeros((R, d))
        score = np.zeros((R, n, k))
        for _ in range(T):
            g = sgd.local_gradients(st.data, w)
            g_tilde = g + insert + stacked_normal(rngs, (n, d), s)
            score += (g_tilde - g)[..., st.coords] * (st.m / hb.C1)
            w = sgd.update(w, g_tilde, lr=self.lr, lam_n=self.lam_n, reg=self.reg, convention=self.convention)
        return OneRun(score, z * factor, {})


@dataclass(frozen=True)
class Dvp(Mechanism):
    """Dual variable perturbation on the star network (algorithms.consensus.dvp): pure eps-DP per iteration."""

    rho: float = 0.1
    lam_n: float = 1e-6

    paper: ClassVar[str] = PAPER
    id: ClassVar[str] = "huang_dvp"
    capabilities: ClassVar[frozenset] = frozenset({FRONTIER})
    layout: ClassVar = STAR
    label: ClassVar[str] = "HUANG DVP"
    release: ClassVar[str] = "Gamma-norm objective (dual) perturbation, pure eps per iteration (docs/choices.md#huang-dvp)"
    kind: ClassVar[str] = PURE
    noise_name: ClassVar[str] = "eps_iter"
    paper_accounting: ClassVar[str] = "basic composition, T eps (docs/choices.md#huang-total-privacy)"
    noiseless_needs_calibration: ClassVar[bool] = True   # the extra regulariser Delta follows the per-iteration eps

    def spend(self, T: int, delta: float, eps_iter: float) -> Spend:
        return hb.dvp_spend(eps_iter, T)

    def fast_calibration(self, target: float, delta: float, T: int, *, rtol: float = 2e-3,
                         how: str = "optimal") -> dict:
        """The per-iteration eps whose T-fold composition (`how`: optimal, or basic = the paper's sum) meets
        `target` at `delta` (its spend is those T steps: `calibrate` checks it)."""
        cal = calibrate.pure_epsilon_step(target, delta, T, how=how, rtol=rtol)
        paper = totals(self.spend(T, delta, eps_iter=cal.value), delta, pld=False)["paper_eps"]
        return {"noise": cal.value, "eps_iter": cal.value, "tight_eps": cal.epsilon, "evaluations": cal.evaluations,
                "steps": (PURE, np.full(int(T), cal.value)),
                "accounting": f"{how} composition of T pure eps-DP iterations", "paper_eps": paper}

    def run(self, data: cs.StarData, cal: dict, T: int, rngs, *, noiseless: bool = False) -> np.ndarray:
        """Every agent's final model, all repeats: (R, n, d). `noiseless`: with b = 0 the local solve is ADMM's
        with lambda/n + Delta, Delta the extra regulariser of this eps."""
        if noiseless:
            Delta = hb.dvp_calibration(cal["eps_iter"], data.m, self.lam_n, self.rho)["Delta"]
            return cs.admm(data, reg="l2", T=T, rho=self.rho, lam_n=self.lam_n + Delta, repeats=data.D,
                           record=False).meta["w_tilde"]
        return cs.dvp(data, epsilon=cal["eps_iter"], T=T, rngs=rngs, rho=self.rho, lam_n=self.lam_n,
                      record=False).meta["w_tilde"]


# ------------------------------------------------------------------------------------------------- audit data
def star_pair(canary: GradientCanary, agents: int) -> tuple[cs.StarData, cs.StarData]:
    """StarData for D_0 and D_1: agent 1 holds the canary's dataset, any further agents a copy of D_0's rows (their
    data is the same under both neighbours, and they do not touch agent 1's release within one step)."""
    if int(agents) != agents or agents < 1:
        raise ValueError(f"agents must be an integer >= 1, got {agents!r}")
    out = []
    for b in (0, 1):
        A = np.stack([canary.X[b]] + [canary.X[0]] * (int(agents) - 1))
        y = np.stack([canary.y[b]] + [canary.y[0]] * (int(agents) - 1))
        out.append(cs.star_data(A, y))
    return tuple(out)


@dataclass
class OneRunCanaries:
    """R runs of n agents x m rows: the same clean rows, k canary slots per agent, canary labels S (R, n, k)."""

    data: cs.StarData          # canary labels S
    plus: cs.StarData          # every canary labelled +1 (what the adversary subtracts)
    S: np.ndarray
    coords: np.ndarray         # (k,) canary coordinate of slot l
    m: int
    canary_norm: float


def one_run_canaries(X, y, *, agents: int, rows_per_agent: int, canaries: int, runs: int, canary_norm: float,
                     rows_rng: np.random.Generator, signs_rng: np.random.Generator) -> OneRunCanaries:
    """`runs` datasets of `agents` x `rows_per_agent` rows: clean rows drawn by `rows_rng` (the same in every run),
    then `canaries` slots per agent holding canary_norm e_j on the least used coordinates, labels S drawn by
    `signs_rng`."""
    n, m, k, R = int(agents), int(rows_per_agent), int(canaries), int(runs)
    X = sp.csr_matrix(X)
    N, d = X.shape
    clean = rows_rng.choice(N, size=n * (m - k), replace=False).reshape(n, m - k)
    coords = least_used(X[clean.ravel()], k)
    S = signs_rng.choice([-1.0, 1.0], size=(R, n, k))
    rows = np.empty((R, n, m), dtype=np.int64)
    rows[:, :, :m - k] = clean
    rows[:, :, m - k:] = N + np.arange(R * n * k).reshape(R, n, k)
    X_ext = sp.vstack([X, canary_rows(coords, R * n, d, canary_norm)]).tocsr()
    y = np.asarray(y, float)
    data = cs.star_from_rows(X_ext, np.concatenate([y, S.ravel()]), rows)
    plus = cs.star_from_rows(X_ext, np.concatenate([y, np.ones(S.size)]), rows)
    return OneRunCanaries(data, plus, S, coords, m, float(canary_norm))


def white_box_canaries(X, y, *, agents: int, rows_per_agent: int, canaries: int, runs: int,
                       rows_rng: np.random.Generator, signs_rng: np.random.Generator) -> OneRunCanaries:
    """The canaries of `*.one_run_white_box`: the datasets of `one_run_canaries` with every canary slot an empty
    record (its gradient is 0, so each agent still averages over m records), and the canary's gradient S c_1 e_j
    inserted into the agent's gradient by the audit itself. Threat model: white-box, an adversary that can put any
    gradient of norm <= c_1 into one record's place (what Lemma 1's sensitivity assumes of a record), not only
    gradients of records with unit-norm features."""
    return one_run_canaries(X, y, agents=agents, rows_per_agent=rows_per_agent, canaries=canaries, runs=runs,
                            canary_norm=0.0, rows_rng=rows_rng, signs_rng=signs_rng)
