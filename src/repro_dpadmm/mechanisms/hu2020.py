"""HU et al., "Learning Privately over Distributed Features: An ADMM Sharing Approach": one party's release in ADMM
sharing (Algorithm 1, eq. (7)) as a mechanism.

HU's neighbouring relation is its own: one feature column of a party's block D_m changes, ||D_m - D'_m|| <= 1
(feature-level DP, Definition 1), rows of unit norm (Assumption 1.3). Theorem 1 calibrates sigma = sqrt(2 ln(1.25/
delta)) C / eps per iteration with Lemma 1's sensitivity bound C = 3 [lambda c_1 + (1 + M rho) b_1] / (d_m rho);
Corollary 1 composes T iterations by advanced composition (`hu2020.corollary1`).

`SharedRelease(noise_on=...)` is the release in the three readings of algorithms.sharing (docs/choices.md#hu-noise-placement):
"shared", D_m x_m + N(0, sigma^2 I_N), the mechanism Theorem 1 analyses and the authors' noise sweeps ran; "params",
D_m (x_m + N(0, sigma^2 I)), eq. (7) read literally; "authors", the calibration of the authors' (eps, delta) runs,
D_m (x_m + xi), xi ~ N(0, sigma_t^2 (D_m^T D_m)^+), sigma_t from the iterates. In the last two the pushed value lies
in the column space of D_m, which the neighbour changes: a subspace test separates the datasets exactly.

HU is not on the equal-privacy frontier (its guarantee is feature-level, not record-level), so the mechanism has no
frontier `run`: its release runs inside the audits (the library's `sharing.local_update`, one seeded Generator per
repeat or trial). `sharing_canary` + `SharedRelease.audit_case`: one local update from a warm state, the canary
column found greedily with the library's noise-free step. `one_run_canaries` + `SharedRelease.one_run`: whole runs
with noise on the shared values. Canary j is a column of party 1 (one of those the clean rows use least, emptied) that is
non-zero only in two dedicated rows a_j, b_j: 1/2 in row a_j and S_j / 2 in row b_j (the two states differ by 1 in
one entry); those rows have no other party-1 feature and a real row's party-2 features scaled to norm sqrt(3)/2.
The canary columns are then orthogonal to every other party-1 column, and in party 1's released value D_1 x_1 (the
x-update (6) with K_1 = 2 lambda I + rho D_1^T D_1) the two states differ by Delta_j = (q_b e_a + q_a e_b) /
(2 kappa), kappa = 2 lambda + rho / 2, q = y + rho (s_{-1} - z) public. The adversary sees every party's shared value
for all t, predicts party 1's release with the library's `sharing.local_update` on the all-+1 data from the public
values and scores the residual r_t by the Gaussian likelihood ratio -sum_t (<r_t, Delta_{j,t}> - ||Delta_{j,t}||^2/2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from ..algorithms import sharing as sh
from ..privacy import accounting, calibrate
from ..privacy.audit.canaries import least_used
from ..privacy.audit.trials import AuditCase
from ..privacy.bounds import hu2020 as hb
from ..privacy.spend import REPLACE_ONE, Spend, totals
from .base import AUDIT, AUDIT_RUN, Claim, GaussianMechanism, OneRun

SUBSPACE_CAVEAT = {
    "params": " This is a warning about a literal reading of eq. (7): the authors' noise sweeps and Theorem 1 put "
              "independent noise on each sample's shared value (audited as Theorem 1's mechanism).",
    "authors": " The paper's proof does not cover this calibration (its noise lies in the column space of D_m, total "
               "variance sigma_t^2 rank(D_m) instead of sigma^2 N).",
}


@dataclass(frozen=True)
class SharedRelease(GaussianMechanism):
    """Party m's pushed value in one iteration of ADMM sharing (algorithms.sharing.local_update), noise `noise_on`.
    rho, lam: the sum-form problem's penalty and regulariser; c1: the loss-derivative bound of Lemma 1 (and of the
    authors' calibration)."""

    noise_on: str = "shared"
    rho: float = 1.0
    lam: float = 1e-3
    c1: float = 2.0

    paper: ClassVar[str] = "hu2020_sharing"
    id: ClassVar[str] = "hu_sharing"
    capabilities: ClassVar[frozenset] = frozenset({AUDIT, AUDIT_RUN})
    short_label: ClassVar[str] = "HU ADMM sharing"
    audit_kind: ClassVar[str] = "hu2020"
    audit_dataset: ClassVar[str] = "a9a"
    audit_run_block: ClassVar[str] = "hu2020"
    audit_run_dataset: ClassVar[str] = "a9a"
    paper_accounting: ClassVar[str] = "Theorem 1 per iteration, Corollary 1 (advanced composition) over T"
    # HU's relation (Definition 1) replaces one feature column of one party, ||D_m - D'_m|| <= 1: replace-one on
    # columns; C is the sensitivity under it.
    neighbouring: ClassVar[str] = REPLACE_ONE

    def __post_init__(self):
        if self.noise_on not in sh.NOISE_TARGETS:
            raise ValueError(f"noise_on must be 'shared' (Theorem 1), 'params' (eq. (7) read literally) or 'authors' "
                             f"(the authors' (eps, delta) calibration), got {self.noise_on!r}")

    @property
    def label(self) -> str:
        return {"shared": "HU release, noise on the shared value (Theorem 1; the authors' noise sweeps)",
                "params": "HU release, eq. (7) read literally: noise on x_m (a warning about that reading)",
                "authors": "HU release, the authors' (eps, delta) calibration: D_m xi, xi ~ N(0, sigma_t^2 "
                           "(D_m^T D_m)^+)"}[self.noise_on]

    @property
    def release(self) -> str:
        return {"shared": "D_m x_m + N(0, sigma^2 I_N)", "params": "D_m (x_m + N(0, sigma^2 I))",
                "authors": "D_m (x_m + xi), xi ~ N(0, sigma_t^2 (D_m^T D_m)^+)"}[self.noise_on]

    @property
    def sound(self) -> bool:
        return self.noise_on == "shared"

    def paper_noise(self, C, epsilon: float, delta: float, *, strict: bool = True):
        """Theorem 1: sigma = sqrt(2 ln(1.25/delta)) C / epsilon per iteration (strict: epsilon <= 1, as stated)."""
        return hb.theorem1_sigma(C, epsilon, delta, strict=strict)

    def spend(self, T: int, delta: float | None, z: float, delta_prime: float | None = None) -> Spend:
        """T releases with multiplier z = sigma / C (C: Lemma 1's bound), replace-one on feature columns; with
        Theorem 1's per-iteration `delta` and Corollary 1's `delta_prime`, the paper's total by advanced
        composition."""
        return hb.spend(z, 1.0, T, delta, delta_prime)     # sigma in units of C: the multiplier as calibrated

    def paper_claim(self, epsilon: float, paper_delta: float, T: int, *, C: float, delta_prime: float,
                    delta: float) -> Claim:
        """The authors' (epsilon, delta) runs: Theorem 1's sigma per iteration (any epsilon, as the authors ran it),
        Corollary 1's total over T at (T paper_delta + delta'); the tight total at the audit's `delta`."""
        s = float(self.paper_noise(C, epsilon, paper_delta, strict=False))
        paper = totals(hb.spend(s, C, T, paper_delta, delta_prime), delta, pld=False)["paper_eps"]
        return Claim(delta, s, paper, accounting.analytic_gaussian_epsilon(s / C, delta, steps=int(T)),
                     hb.corollary1_delta(paper_delta, T, delta_prime))

    def level_claim(self, level: float, delta: float, T: int, *, C: float) -> Claim:
        """sigma / C calibrated so that T releases total exactly `level` at `delta`; the paper's own total for that
        noise: Theorem 1 per iteration at delta_s = delta / (2T), Corollary 1 with delta' = delta / 2, so that its
        total delta T delta_s + delta' is the level's delta."""
        z = calibrate.gaussian_multiplier_exact(level, delta, T).value
        paper = totals(self.spend(T, delta / (2 * T), z, delta / 2), delta, pld=False)["paper_eps"]
        return Claim(delta, z * C, paper, accounting.analytic_gaussian_epsilon(z, delta, steps=int(T)), delta)

    # ------------------------------------------------------------------------------------------- audit routing
    @staticmethod
    def audit_pair(X, y, params: dict, rng_of, warm_epsilon: float | None = None) -> SharingCanary:
        """HU's feature-level canary on a9a (`sharing_canary`, the audit's `hu2020` block), after noise-free warm
        iterations or, with `warm_epsilon`, warm iterations carrying Theorem 1's noise at that epsilon."""
        hp = params["hu2020"]
        noisy = {} if warm_epsilon is None else {
            "warm_epsilon": float(warm_epsilon), "warm_delta": float(params["delta"]),
            "warm_rng": rng_of("hu-warm-noise")}
        return sharing_canary(X, y, rows=int(hp["rows"]), boundaries=hp["boundaries"], rho=float(hp["rho"]),
                              lam=float(hp["lam"]), c1=float(hp["c1"]), warm_iterations=int(hp["warm_iterations"]),
                              canary_columns=int(hp["canary_columns"]), party=int(hp.get("party", 0)),
                              rng=rng_of("hu-rows"), **noisy)

    @classmethod
    def audit_check(cls, key: str, mech: dict) -> None:
        """noise_on is one of the three readings; warm_noise only with noise on the shared values."""
        if mech.get("noise_on") not in sh.NOISE_TARGETS:
            raise ValueError(f"mechanism {key!r}: noise_on must be 'shared' (Theorem 1), 'params' (eq. (7) read "
                             f"literally) or 'authors' (the authors' (eps, delta) calibration)")
        if mech.get("warm_noise") and mech.get("noise_on") != "shared":
            raise ValueError(f"mechanism {key!r}: warm_noise applies to HU with noise_on='shared' only")

    @classmethod
    def audited(cls, params: dict, mech: dict, canary: SharingCanary) -> AuditCase:
        hp = params["hu2020"]
        return cls(noise_on=mech["noise_on"], rho=float(hp["rho"]), lam=float(hp["lam"]),
                   c1=float(hp["c1"])).audit_case(canary, float(mech["epsilon"]), float(params["delta"]))

    @classmethod
    def for_audit_run(cls, params: dict) -> SharedRelease:
        up = params["hu2020"]
        return cls(rho=float(up["rho"]), lam=float(up["lam"]), c1=float(up["c1"]))

    def one_run_setup(self, X, y, params: dict, rng_of) -> OneRunCanaries:
        """The whole-run audit's datasets with canary columns (`one_run_canaries`) from its `hu2020` block."""
        up = params["hu2020"]
        return one_run_canaries(X, y, rows=up["rows"], canaries=up["canaries"], runs=up["runs"],
                                boundaries=up["boundaries"], rho=float(up["rho"]), lam=float(up["lam"]),
                                c1=float(up["c1"]), iterations_b1=int(up["iterations_b1"]),
                                rows_rng=rng_of("hu-rows"), signs_rng=rng_of("hu", "signs"))

    def claim_kwargs(self, setup: OneRunCanaries, params: dict) -> tuple[dict, dict]:
        """Party 1's Lemma 1 C of the runs (and Corollary 1's delta' for the paper's claims)."""
        up, C1 = params["hu2020"], float(setup.C[0])
        return ({"C": C1, "delta_prime": float(up["delta_prime"]), "delta": float(params["level_delta"])},
                {"C": C1})

    # ------------------------------------------------------------------------------------------- one step
    def audit_case(self, canary: SharingCanary, epsilon: float, delta: float) -> AuditCase:
        """One local update from the canary's warm state; released: party m's pushed value. sigma: Theorem 1 with
        Lemma 1's C_m ("shared", "params"), or the authors' sigma_t of the audited step on D_0 with the multiplier
        sqrt(2 ln(1.25/delta)) / epsilon ("authors")."""
        eps, delta, noise_on, c1 = float(epsilon), float(delta), self.noise_on, self.c1
        M = len(canary.boundaries) - 1
        if noise_on == "authors":
            sig_party = np.asarray(self.paper_noise(np.ones(M), eps, delta), float)   # multipliers
        else:
            sig_party = np.asarray(self.paper_noise(canary.C, eps, delta), float)     # (M,), Theorem 1
        sig_feat = sig_party[canary.setups[0].party]

        def step(b: int, noise_factor: float, rngs: Sequence) -> np.ndarray:
            k = len(rngs)
            new = sh.local_update(canary.setups[b], canary.state_for(b, k, noise_on),
                                  np.broadcast_to(sig_feat * noise_factor, (k, len(sig_feat))), rngs, noise_on,
                                  np.broadcast_to(sig_party * noise_factor, (k, M)), c1)
            return canary.share(b, new, noise_on)

        m = canary.party
        sigma = float(sig_party[m])
        if noise_on == "authors":              # sigma_t of party m in the audited step on D_0 (noise-free update)
            sigma = float(sh.local_update(canary.setups[0], canary.state_for(0, 1, noise_on), None, None, noise_on,
                                          sig_party[None, :], c1).sig[0, m])
        common = dict(label=self.label, paper=self.paper, epsilon=eps, delta=delta, sigma=sigma,
                      paper_sensitivity=float(canary.C[m]), step=step,
                      neighbours=f"one feature column of party {m + 1} changes sign in {len(canary.rows)} row(s) "
                                 f"(‖D_m − D'_m‖ ≤ 1, unit-norm rows)",
                      notes=[f"N = {canary.D[0].shape[0]} rows, parties {np.diff(canary.boundaries).tolist()}, "
                             f"audited step {canary.warm + 1}, column {canary.column} flipped in rows "
                             f"{canary.rows.tolist()}, b_1 = {canary.b1:.4g}, C_m = {canary.C[m]:.4g}, noise-free "
                             f"share gap {canary.share_gap:.4g}, Lemma 1's per-step bound {canary.step_bound:.4g}"],
                      extras={"b1": canary.b1, "lemma1_C": float(canary.C[m]), "share_gap": canary.share_gap,
                              "lemma1_step_bound": canary.step_bound, **(canary.proof_norm or {}),
                              "warm_noisy": canary.state.xi is not None, "state_b1": canary.state_b1,
                              "lemma1_C_state_b1": float(lemma1_C(self.rho, self.lam, c1, canary.state_b1,
                                                                  canary.boundaries)[m])})
        if noise_on == "shared":
            return AuditCase(sensitivity=float(canary.C[m]), pair_distance=canary.share_gap, correct=True, **common)
        # eq. (7) and the authors' calibration: the pushed value D_m x~_m lies in the column space of D_m, which the
        # canary changes: the subspace test (the likelihood-ratio test of two degenerate Gaussians) separates the two
        # datasets exactly.
        Q, _ = np.linalg.qr(canary.D[0][:, canary.block()])

        def residual(o: np.ndarray) -> np.ndarray:
            o = np.asarray(o, float)
            return np.linalg.norm(o - (o @ Q) @ Q.T, axis=1)

        return AuditCase(sensitivity=None, pair_distance=None, correct=False, score=residual,
                         score_name="subspace residual", caveat=SUBSPACE_CAVEAT[noise_on], **common)

    # ------------------------------------------------------------------------------------------- whole runs
    def one_run(self, st: OneRunCanaries, T: int, sigma: float, factor: float, rngs) -> OneRun:
        """Runs with noise on the shared values, party 1's sigma x factor and every party at the same epsilon
        (sigma_m = sigma C_m / C_1). The canaries' own composed Gaussian has mu^2 = mean over canaries of
        sum_t ||Delta_{j,t}||^2 / sigma^2; extras: `noisy_b1`, the largest ||x||, ||y||, ||z|| of the noisy runs
        (what Assumption 1.1's b_1 would have to bound)."""
        score, energy, noisy_b1 = self.one_run_scores(st, T, sigma * factor * st.C / st.C[0], rngs)
        return OneRun(score, sigma * factor * np.sqrt(T / float(energy.mean())), {"noisy_b1": noisy_b1})

    def one_run_scores(self, st: OneRunCanaries, T: int, sigma_party: np.ndarray,
                       rngs) -> tuple[np.ndarray, np.ndarray, float]:
        """Scores (R, k), each canary's sum_t ||Delta_{j,t}||^2 (R, k), and the largest ||x||, ||y||, ||z|| of the
        noisy runs, for runs with noise sigma_party on the shared values; the adversary sees every party's shared
        value at every t."""
        if self.noise_on != "shared":
            raise ValueError("the one-run audit runs ADMM sharing with noise on the shared values (noise_on='shared')")
        R, k = st.S.shape
        b, M = st.boundaries, len(st.boundaries) - 1
        score, energy = np.zeros((R, k)), np.zeros((R, k))
        noisy_b1 = 0.0
        sig = np.asarray(sigma_party, float)[None, :]
        for r in range(R):          # each run has its own data (its canary states), so its own factored setup
            s_up, s_plus = st.setups[r], st.plus[r]
            state = sh.initial_state(s_up, 1, "shared")
            rel = np.zeros((1, s_up.D.shape[0], M))                          # every party's last shared value
            for _ in range(T):
                new = sh.local_update(s_up, state, None, [rngs[r]], "shared", sig)
                # the adversary: party 1's release predicted from the public values on the all-+1 data
                pub = sh.SharingState(np.zeros_like(state.x), np.zeros_like(state.x), rel, state.s, state.z, state.y)
                pred = sh.local_update(s_plus, pub, None, None, "shared")
                q = state.y[0] + s_up.rho * (state.s[0] - rel[0, :, 0] - state.z[0])
                rel = np.stack([sh._mv(s_up.D[:, b[m]:b[m + 1]], new.x[:, b[m]:b[m + 1]]) + new.xi[..., m]
                                for m in range(M)], axis=-1)
                resid = rel[0, :, 0] - sh._mv(s_plus.D[:, b[0]:b[1]], pred.x[:, b[0]:b[1]])[0]
                qa, qb = q[st.rows_a], q[st.rows_b]
                da, db = qb / (2 * st.kappa), qa / (2 * st.kappa)             # Delta_j on rows a_j and b_j
                sq = da ** 2 + db ** 2
                score[r] -= resid[st.rows_a] * da + resid[st.rows_b] * db - sq / 2
                energy[r] += sq
                state = sh.centre_update(s_up, new)
                noisy_b1 = max(noisy_b1, *(float(np.linalg.norm(v)) for v in (state.x, state.y, state.z)))
        return score, energy, noisy_b1


def lemma1_C(rho: float, lam: float, c1: float, b1: float, boundaries) -> np.ndarray:
    """Lemma 1's C per party for the observed b_1."""
    b = tuple(boundaries)
    return np.asarray(hb.sensitivity_bound(lam, c1, b1, len(b) - 1, rho, np.diff(b)), float)


# ------------------------------------------------------------------------------------------------- one-step canary
@dataclass
class SharingCanary:
    """Feature-level neighbours D_0, D_1 (one column of party m's block changes sign in a few rows) and the state."""

    D: tuple
    Y: np.ndarray
    boundaries: tuple
    party: int
    column: int
    rows: np.ndarray
    setups: tuple
    state: sh.SharingState        # one run, built on D_0; `state_for(b)` makes the shared sum consistent with D_b
    warm: int                     # noise-free iterations before the audited step
    b1: float
    C: np.ndarray                 # Lemma 1's bound per party
    share_gap: float              # ||D_0m x_0m - D_1m x_1m|| of the noise-free step
    step_bound: float             # the bound Lemma 1's proof derives for this step, before b_1 (see lemma1_step_bound)
    proof_norm: dict | None = None   # the operator norm of Lemma 1's proof step (see `proof_operator_norm`)
    state_b1: float | None = None    # the largest of b_1 and the warm state's ||x||, ||y||, ||z|| (a noisy state's norms)

    def block(self) -> np.ndarray:
        return np.arange(self.boundaries[self.party], self.boundaries[self.party + 1])

    def state_for(self, b: int, runs: int, noise_on: str) -> sh.SharingState:
        """The state broadcast to `runs` trials, with s = D_b x~ (+ the parties' pending shared noise of a noisy warm
        state): the other parties' shares are the same under D_0 and D_1; party m's cached own share is recomputed
        with its own data."""
        st = self.state
        rep = lambda a: np.broadcast_to(a, (runs,) + a.shape[1:])  # noqa: E731
        s = sh._mv(self.D[b], st.xt)
        if st.xi is not None:                   # a noisy warm state: the shares carry their noise
            if noise_on != "shared":
                raise ValueError("a warm state with noise on the shared values is audited with noise_on='shared'")
            s = s + st.xi.sum(axis=-1)
            xi = rep(st.xi)
        else:
            xi = np.zeros((runs, self.D[b].shape[0], len(self.boundaries) - 1)) if noise_on == "shared" else None
        return sh.SharingState(rep(st.x), rep(st.xt), xi, rep(s), rep(st.z), rep(st.y))

    def share(self, b: int, new: sh.SharingState, noise_on: str) -> np.ndarray:
        """Party m's pushed value D_m x~_m (+ xi_m) from a local update on D_b: (runs, N)."""
        blk = self.block()
        own = sh._mv(self.D[b][:, blk], new.xt[:, blk])
        return own + new.xi[:, :, self.party] if noise_on == "shared" else own


def sharing_canary(X: np.ndarray, y: np.ndarray, *, rows: int, boundaries, rho: float, lam: float, c1: float,
                   warm_iterations: int, canary_columns: int, rng: np.random.Generator,
                   party: int = 0, warm_epsilon: float | None = None, warm_delta: float | None = None,
                   warm_rng: np.random.Generator | None = None) -> SharingCanary:
    """`rows` rows of X drawn by `rng` (scaled to unit norm); the state after `warm_iterations` iterations on D_0 (the
    audited step is the next one); b_1 and Lemma 1's C as the hu2020 eps_sweep item computes them (the largest ||x||,
    ||y||, ||z|| of the noise-free run, here the run of warm_iterations + 1 iterations that ends with the audited
    step); and the greedy canary column (see `_greedy_column`).
    The warm iterations are noise-free, or, with `warm_epsilon` (and `warm_delta`, `warm_rng`), carry Theorem 1's
    noise for that per-iteration epsilon on every party's shared value (sigma_m = sqrt(2 ln(1.25/delta)) C_m / eps):
    the state an audited step of a private run starts from."""
    N, b = int(rows), tuple(int(v) for v in boundaries)
    idx = rng.choice(len(y), size=N, replace=False)
    D = np.asarray(X[idx], float)
    norms = np.linalg.norm(D, axis=1)
    if np.any(norms == 0):
        raise ValueError("a sampled row is all zeros and cannot be normalised to unit norm; use another seed")
    D = D / norms[:, None]                       # Assumption 1.3: every row has norm 1
    Y = np.asarray(y[idx], float)
    party = int(party)
    if not 0 <= party < len(b) - 1:
        raise ValueError(f"party must index one of the {len(b) - 1} parties, got {party}")
    st0 = sh.setup(D, Y, b, rho=rho, lam=lam, pinv_half=True)     # pinv_half: the authors' calibration needs it
    warm = int(warm_iterations)
    ref = sh.admm_sharing(D, Y, b, rho=rho, lam=lam, iterations=warm + 1, sigma=0.0, runs=1, setup_=st0)
    b1 = sh.observed_b1(ref)
    C = lemma1_C(rho, lam, c1, b1, b)
    if warm_epsilon is None:
        state = sh.initial_state(st0, 1, "params")
        for _ in range(warm):
            state = sh.sharing_step(st0, state, None, None, "params")
    else:
        if warm_delta is None or warm_rng is None:
            raise ValueError("a noisy warm state needs warm_delta and warm_rng besides warm_epsilon")
        sig = np.asarray(hb.theorem1_sigma(C, float(warm_epsilon), float(warm_delta), strict=False), float)[None, :]
        state = sh.initial_state(st0, 1, "shared")
        for _ in range(warm):
            state = sh.sharing_step(st0, state, None, [warm_rng], "shared", sig)
    column, rows_, D1, gap = _greedy_column(D, Y, b, party, rho, lam, state, int(canary_columns))
    D1s = sh.setup(D1, Y, b, rho=rho, lam=lam, pinv_half=True)
    step = lemma1_step_bound(state, b, party, rho, lam, c1)
    state_b1 = max(b1, *(float(np.linalg.norm(v)) for v in (state.x, state.y, state.z)))
    return SharingCanary((D, D1), Y, b, party, column, rows_, (st0, D1s), state, warm, b1, C, gap, step,
                         proof_operator_norm(D[:, b[party]:b[party + 1]]), state_b1)


def proof_operator_norm(Dm: np.ndarray) -> dict:
    """The step of Lemma 1's proof (§7.1) that bounds ||Phi_1|| by rho^-1 ||(D_m^T D_m)^-1|| [...] = 1/(d_m rho) [...]
    takes ||D_m (D_m^T D_m)^{-1}|| <= 1/d_m. Measured on the party's block: its rank (the inverse exists only at full
    column rank), the spectral norm of D_m (D_m^T D_m)^+ (the pseudo-inverse where the inverse does not exist: 1 / the
    smallest nonzero singular value of D_m) and the bound 1/d_m."""
    sv = np.linalg.svd(np.asarray(Dm, float), compute_uv=False)
    keep = sv > sv.max(initial=0.0) * max(Dm.shape) * np.finfo(float).eps
    return {"block_rank": int(keep.sum()), "block_columns": int(Dm.shape[1]),
            "proof_norm": float(1.0 / sv[keep].min()), "proof_norm_bound": 1.0 / Dm.shape[1]}


def lemma1_step_bound(state: sh.SharingState, b: tuple, party: int, rho: float, lam: float, c1: float) -> float:
    """The bound the proof of HU Lemma 1 derives for one step, before it replaces the norms by b_1:
    3 / (d_m rho) [lambda c_1 + ||y^t|| + rho ||z^t|| + rho sum_{k != m} ||x~_k^t||]. Unlike C it does not depend on
    how the loss is scaled (sum or mean with rho scaled alike), so a canary beyond it contradicts the lemma itself."""
    d_m = b[party + 1] - b[party]
    others = sum(float(np.linalg.norm(state.xt[0, b[k]:b[k + 1]])) for k in range(len(b) - 1) if k != party)
    return 3.0 / (d_m * rho) * (lam * c1 + float(np.linalg.norm(state.y[0])) + rho * float(np.linalg.norm(state.z[0]))
                                + rho * others)


def _noise_free_share(D, Y, b, party, rho, lam, state, setup=None) -> np.ndarray:
    """Party m's share D_m x_m after one noise-free local update from `state` on data D (with the pending shared noise
    of a noisy state in the pulled sum, the party's own subtracted)."""
    st = setup or sh.setup(D, Y, b, rho=rho, lam=lam)
    if state.xi is None:
        s = sh.SharingState(state.x, state.xt, None, sh._mv(D, state.xt), state.z, state.y)
        new = sh.local_update(st, s, None, None, "params")
    else:
        s = sh.SharingState(state.x, state.xt, state.xi, sh._mv(D, state.xt) + state.xi.sum(axis=-1), state.z,
                            state.y)
        new = sh.local_update(st, s, None, None, "shared")
    blk = np.arange(b[party], b[party + 1])
    return sh._mv(D[:, blk], new.xt[:, blk])[0]


def _greedy_column(D, Y, b, party, rho, lam, state, n_columns: int):
    """The canary: flip the sign of D_ij in rows i of one column j of party m's block, as many rows as
    ||D_m - D'_m|| = 2 sqrt(sum_i D_ij^2) <= 1 allows (rows keep unit norm, Assumption 1.3). Single flips are scored
    for every nonzero of the `n_columns` columns with the largest |x_j| of the state (the noise-free step of the
    library), the best column is kept and rows are added greedily, each maximising ||D_m x_m - D'_m x'_m||."""
    base = _noise_free_share(D, Y, b, party, rho, lam, state)
    blk = np.arange(b[party], b[party + 1])
    cols = blk[np.argsort(-np.abs(state.xt[0, blk]), kind="stable")[:max(1, n_columns)]]

    def gap(Dp):
        return float(np.linalg.norm(_noise_free_share(Dp, Y, b, party, rho, lam, state) - base))

    def flipped(rows, j):
        Dp = D.copy()
        Dp[rows, j] = -Dp[rows, j]
        return Dp

    best = (-1.0, None, None)
    for j in cols:
        for i in np.flatnonzero(D[:, j]):
            if 2 * abs(D[i, j]) <= 1:
                g = gap(flipped([i], j))
                if g > best[0]:
                    best = (g, int(j), [int(i)])
    if best[1] is None:
        raise ValueError("no admissible canary: every nonzero of the searched columns is too large to flip "
                         "within ||D_m - D'_m|| <= 1")
    g, j, rows = best
    while True:
        cands = [i for i in np.flatnonzero(D[:, j]) if i not in rows
                 and 2 * np.sqrt(np.sum(D[rows + [i], j] ** 2)) <= 1]
        scored = [(gap(flipped(rows + [int(i)], j)), int(i)) for i in cands]
        if not scored or max(scored)[0] <= g:
            break
        g, i = max(scored)
        rows = rows + [i]
    return j, np.asarray(rows), flipped(rows, j), g


# ------------------------------------------------------------------------------------------------- one-run canaries
@dataclass
class OneRunCanaries:
    setups: list               # one SharingSetup per run (canary states S[r])
    plus: list                 # the same with every canary in state +1 (what the adversary predicts with)
    S: np.ndarray              # (R, k)
    cols: np.ndarray           # (k,) canary columns (party 1)
    rows_a: np.ndarray         # (k,) row with the fixed entry 1/2
    rows_b: np.ndarray         # (k,) row with the entry S_j / 2
    boundaries: tuple
    kappa: float               # 2 lambda + rho ||c_j||^2, the canary column's diagonal entry of K_1
    b1: float
    C: np.ndarray              # Lemma 1's C per party


def one_run_canaries(X, y, *, rows: int, canaries: int, runs: int, boundaries, rho: float, lam: float, c1: float,
                     iterations_b1: int, rows_rng: np.random.Generator,
                     signs_rng: np.random.Generator) -> OneRunCanaries:
    """`runs` datasets of `rows` rows of X (drawn by `rows_rng`) with `canaries` canary columns of party 1 (see the
    module docstring), states S drawn by `signs_rng`; b_1 from the noise-free run of `iterations_b1` iterations on
    the all-+1 data and Lemma 1's C from it."""
    N, k, R = int(rows), int(canaries), int(runs)
    b = tuple(int(v) for v in boundaries)
    idx = rows_rng.choice(len(y), size=N, replace=False)
    D = np.asarray(sp.csr_matrix(X)[idx].todense(), float) if sp.issparse(X) else np.asarray(X, float)[idx].copy()
    Y = np.asarray(y, float)[idx]
    cols = b[0] + least_used(D[:, b[0]:b[1]], k)
    D[:, cols] = 0.0                                                     # the canary columns hold only the canaries
    # canary rows: the last 2k sampled rows with party-2 features; the other rows are the clean data (rows left
    # without any feature are dropped)
    has2 = np.flatnonzero(np.linalg.norm(D[:, b[1]:], axis=1) > 0)
    if has2.size < 2 * k:
        raise ValueError(f"hu2020: only {has2.size} sampled rows have features outside party 1; need {2 * k}")
    crow = has2[-2 * k:]
    clean = np.setdiff1d(np.flatnonzero(np.linalg.norm(D, axis=1) > 0), crow)
    D, Y = np.vstack([D[clean], D[crow]]), np.concatenate([Y[clean], Y[crow]])
    n0 = clean.size
    ra, rb = np.arange(n0, n0 + k), np.arange(n0 + k, n0 + 2 * k)
    D[n0:, b[0]:b[1]] = 0.0
    D[:n0] /= np.linalg.norm(D[:n0], axis=1)[:, None]                   # Assumption 1.3: unit-norm rows
    D[n0:] *= (np.sqrt(3.0) / 2.0) / np.linalg.norm(D[n0:], axis=1)[:, None]   # party-2 part of norm sqrt(3)/2
    D[ra, cols] = 0.5
    S = signs_rng.choice([-1.0, 1.0], size=(R, k))

    def with_signs(signs):
        Dr = D.copy()
        Dr[rb, cols] = 0.5 * signs
        return sh.setup(Dr, Y, b, rho=rho, lam=lam)

    plus = with_signs(np.ones(k))
    ref = sh.admm_sharing(plus.D, Y, b, rho=rho, lam=lam, iterations=int(iterations_b1), sigma=0.0,
                          noise_on="shared", runs=1, setup_=plus)
    b1 = sh.observed_b1(ref)
    C = lemma1_C(rho, lam, c1, b1, b)
    return OneRunCanaries([with_signs(S[r]) for r in range(R)], [plus] * R, S, cols, ra, rb, b, 2 * lam + rho / 2,
                          b1, C)
