"""Beyond the papers, item `audit_run`: a one-run privacy audit of whole T-iteration runs (Steinke, Nasr and Jagielski
2023; `privacy.one_run_audit`), against the papers' composed guarantees.

The item `audit` tests one step of each Gaussian mechanism with two neighbouring datasets and 10^5 trials. The papers'
totals are about the whole run: HUANG's moments accountant over t = 100 iterations, XU's Theorem 1 (an RDP bound
over T iterations). Here every audited run is ONE run of the library's own algorithm on a dataset holding m canaries,
each in one of two states S_i = +1 / -1 drawn with probability 1/2; the adversary sees the whole transcript, scores
each canary by summing its effect over the transcript, and the one-run bound turns the correct guesses into a lower
bound on the total epsilon (confidence 1 - alpha, Bonferroni over the guess fractions).

Neighbours: replace-one records, the relation of every sensitivity audited here (HUANG 2c_1/m_i; XU c/n as stated,
2c/n corrected). A canary slot holds the record (a, S_i): the same feature vector with label +1 or -1.

Canaries, designed for the white-box transcript. Feature vector a = r e_j, with e_j one of the k coordinates the clean
data uses least (smallest column energy), k distinct coordinates per agent (HUANG) or per run (XU), so that the canaries
of one transcript are orthogonal. The per-example logistic gradient -b a sigma(-b w^T a) of the pair differs by exactly
a (sigma(t) + sigma(-t) = 1) at EVERY state w: the canary's effect is state-independent.
* r = 1 where the guarantee assumes ||a|| <= c_1 = 1 (HUANG DP-ADMM, XU): the pair's gradient gap is 1, half the
  replace-one bound 2c_1 (the most any pair reaches from w = 0, where every per-example gradient has norm ||a|| / 2),
  and exactly XU's stated sensitivity c/n.
* r = `dpsgd_canary_norm` (5) for DPSGD, whose per-example clipping at C = c_1 (Abadi et al.) is what bounds its
  sensitivity: both gradients r sigma(-+r w_j) e_j are clipped to norm 1 while |w_j| <= ln(r - 1)/r (0.28 for r = 5,
  the widest range over r), and the gap is then 2 = the full bound 2C. (A huge r would leave the clip as soon as
  |w_j| > ln(r)/r, and the canary would lose reach.)

Score (the white-box adversary). The adversary knows the clean data, the algorithm and every public value, not S.
For each released iterate it computes the library's own noise-free update from the previous public state on the
dataset with every canary labelled +1, and subtracts it: the residual is the noise plus, for each canary with
S_i = -1, its known gradient gap mapped through the update. The score of canary i is the residual's coordinate e_j
(scaled by the update's known factor) summed over all T iterations: N(0, T var) under S_i = +1 and shifted by -T
(or -2T for DPSGD) under S_i = -1, i.e. the likelihood-ratio statistic of the composed Gaussian.
* HUANG DP-ADMM: the adversary sees every agent's shared w-tilde_i^k for k = 1..T (and so w^k and gamma_i^k, which the
  aggregator forms from them); the run steps `algorithms.consensus.dpadmm` one iteration at a time (same streams,
  same result as one call: tests/test_beyond_audit_run.py).
* HUANG DPSGD: every agent's message g-tilde_i^k = g_i + N(0, sigma^2 I) for all k, the release its (eps, delta) is
  claimed for; built from `algorithms.sgd.local_gradients` and `update` (the same draws as `sgd.dpsgd`, tested).
* XU DP-ADMM: x_t for t = 1..T from `algorithms.linearized.xu_dp_admm` (u_0 as published); the adversary recomputes
  y_t, u_t from them (its u_0 from the +1 dataset: u_0's dependence on the canaries only costs the score power).

Claims compared per mechanism and level: the paper's own total (HUANG: moments accountant; XU: Theorem 1), the tight
total of the same noise (dp-accounting PLD; for XU under replace-one 2c/n), the tight total at the canary's own gap
(the ceiling of any audit with these canaries), the audited lower bound, and the same for a control whose noise is
4x too small (everything else unchanged, the claim unchanged).

HU ADMM sharing (Algorithm 1, noise on the shared value D_m x_m + N(0, sigma^2 I_N): Theorem 1's mechanism, the
authors' noise sweeps). HU's neighbours differ in one feature column of a party, ||D_m - D'_m|| <= 1, rows of unit
norm (Assumption 1.3). Canary j is a column of party 1 (one of the columns the clean rows use least, emptied) that
is non-zero only in two dedicated rows a_j, b_j: 1/2 in row a_j and S_j / 2 in row b_j (the two states differ by 1 in
one entry); those rows have no other party-1 feature and a real row's party-2 features scaled to norm sqrt(3)/2. The
canary columns are then orthogonal to every other party-1 column, and in party 1's released value D_1 x_1 (x-update
(6) with K_1 = 2 lambda I + rho D_1^T D_1) the two states differ by Delta_j = (q_b e_a + q_a e_b) / (2 kappa),
kappa = 2 lambda + rho / 2, q = y + rho (s_{-1} - z) public. The adversary sees every party's shared value for all
t; it predicts party 1's release with the library's `sharing.local_update` on the all-+1 data from the public values
and scores the residual r_t by the Gaussian likelihood ratio -sum_t (<r_t, Delta_{j,t}> - ||Delta_{j,t}||^2 / 2).
Claims: Theorem 1's sigma with Lemma 1's C (b_1 from the noise-free run), composed by Corollary 1 (the paper) or
tightly; [D] N rows of a9a (a smaller N gives a smaller b_1, so a smaller C and less noise: the audit is stronger
than at the paper's N, and "cannot test" carries over).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ..algorithms import consensus as cs
from ..algorithms import linearized as lin
from ..algorithms import sgd
from ..algorithms import sharing as sh
from ..privacy import accounting, calibrate
from ..privacy import one_run_audit as ora
from ..privacy.bounds import hu2020 as hu_bounds
from ..privacy.bounds import huang2019 as hb
from ..privacy.bounds import xu2020 as xu_bounds
from ..problems import fused_lasso as fl
from ..rng import repeat_generators, seed_sequence, stacked_normal

PAPER, ITEM = "beyond", "audit_run"
METHODS = {"huang_dpadmm": "HUANG DP-ADMM", "huang_dpsgd": "HUANG DPSGD", "xu_dpadmm": "XU DP-ADMM",
           "hu_sharing": "HU ADMM sharing"}
VARIANTS = ("claimed", "control")

DEFAULTS = {
    "iterations": "T of every audited run (HUANG's t = 100; XU's headline T)",
    "confidence": "one-sided confidence of every audited lower bound",
    "control_noise_factor": "the 4x under-noised control: the library's sigma x 0.25, the claim unchanged",
    "levels": "the frontier's total epsilons (tight accounting) at level_delta",
    "huang2019": "HUANG's n, m_i, rho, lambda/n, lr; canaries per agent and pooled runs; paper per-iteration grid",
    "xu2020": "XU's constants (§V-B), eta = 1/L_f (SPEC §0.5(2)); rows, canaries and pooled runs; paper grid",
}


# ------------------------------------------------------------------------------------------------- settings
def check_params(params: dict) -> None:
    """Clear errors for the item's settings, before any work."""
    for k in ("iterations", "confidence", "control_noise_factor", "levels", "level_delta", "huang2019", "xu2020"):
        if k not in params:
            raise ValueError(f"beyond/audit_run needs the parameter {k!r} (see config/config.yaml)")
    if int(params["iterations"]) != params["iterations"] or params["iterations"] < 1:
        raise ValueError(f"iterations must be an integer >= 1, got {params['iterations']!r}")
    if not 0.5 <= float(params["confidence"]) < 1:
        raise ValueError(f"confidence must lie in [0.5, 1), got {params['confidence']!r}")
    if not 0 < float(params["control_noise_factor"]) < 1:
        raise ValueError(f"control_noise_factor must lie in (0, 1), got {params['control_noise_factor']!r}")
    if not 0 < float(params["level_delta"]) < 1:
        raise ValueError(f"level_delta must lie in (0, 1), got {params['level_delta']!r}")
    if any(not float(v) > 0 for v in params["levels"]):
        raise ValueError(f"levels must be positive total epsilons, got {params['levels']!r}")
    h, x = params["huang2019"], params["xu2020"]
    for name, block, keys in (("huang2019", h, ("agents", "rows_per_agent", "canaries_per_agent", "runs")),
                              ("xu2020", x, ("rows", "canaries", "runs"))):
        for k in keys:
            if int(block.get(k, 0)) != block.get(k, 0) or block.get(k, 0) < 1:
                raise ValueError(f"{name}.{k} must be an integer >= 1, got {block.get(k)!r}")
    if h["canaries_per_agent"] >= h["rows_per_agent"]:
        raise ValueError("huang2019.canaries_per_agent must be smaller than rows_per_agent")
    for k in ("paper_epsilons",):
        for block, name in ((h, "huang2019"), (x, "xu2020")):
            if any(not float(v) > 0 for v in block.get(k, [])):
                raise ValueError(f"{name}.{k} must hold positive epsilons")
    if any(float(v) > 1 for v in h.get("paper_epsilons", [])):
        raise ValueError("huang2019.paper_epsilons: HUANG's Theorem 1 needs a per-iteration epsilon in (0, 1]")
    if "hu2020" in params:
        u = params["hu2020"]
        for k in ("boundaries", "rho", "lam", "c1", "iterations_b1", "paper_delta", "delta_prime"):
            if k not in u:
                raise ValueError(f"hu2020.{k} is required (see config/config.yaml)")
        for k in ("rows", "canaries", "runs"):
            if int(u.get(k, 0)) != u.get(k, 0) or u.get(k, 0) < 1:
                raise ValueError(f"hu2020.{k} must be an integer >= 1, got {u.get(k)!r}")
        b = [int(v) for v in u["boundaries"]]
        if u["canaries"] >= b[1] - b[0]:
            raise ValueError("hu2020.canaries must be fewer than party 1's columns")
        if 2 * u["canaries"] >= u["rows"]:
            raise ValueError("hu2020.rows must exceed twice the canaries (two dedicated rows each)")
    if not float(h.get("dpsgd_canary_norm", 1)) >= 1:
        raise ValueError("huang2019.dpsgd_canary_norm must be >= 1")


# ------------------------------------------------------------------------------------------------- canaries
def least_used(X, k: int) -> np.ndarray:
    """The k coordinates with the smallest column energy sum_i X_ij^2 in the clean data (ties by index)."""
    energy = np.asarray(sp.csr_matrix(X).power(2).sum(axis=0)).ravel()
    if k > energy.size:
        raise ValueError(f"{k} orthogonal canaries need {k} coordinates; the data has {energy.size}")
    return np.sort(np.argsort(energy, kind="stable")[:k])


def _canary_rows(coords: np.ndarray, reps: int, d: int, norm: float) -> sp.csr_matrix:
    """reps x len(coords) rows norm * e_j, cycling through coords."""
    cols = np.tile(coords, reps)
    return sp.csr_matrix((np.full(cols.size, float(norm)), (np.arange(cols.size), cols)), shape=(cols.size, d))


@dataclass
class HuangSetup:
    """R = runs datasets of n agents x m rows: the same clean rows, k canary slots per agent, signs S (R, n, k)."""

    data: cs.StarData          # canary labels S
    plus: cs.StarData          # every canary labelled +1 (what the adversary subtracts)
    S: np.ndarray
    coords: np.ndarray         # (k,) canary coordinate of slot l
    m: int
    canary_norm: float


def huang_setup(X, y, hp: dict, seed: int, canary_norm: float, tag: str) -> HuangSetup:
    n, m, k, R = (int(hp[key]) for key in ("agents", "rows_per_agent", "canaries_per_agent", "runs"))
    X = sp.csr_matrix(X)
    N, d = X.shape
    rng = np.random.default_rng(seed_sequence(seed, PAPER, ITEM, "huang-rows"))
    clean = rng.choice(N, size=n * (m - k), replace=False).reshape(n, m - k)
    coords = least_used(X[clean.ravel()], k)
    S = np.random.default_rng(seed_sequence(seed, PAPER, ITEM, tag, "signs")).choice([-1.0, 1.0], size=(R, n, k))
    rows = np.empty((R, n, m), dtype=np.int64)
    rows[:, :, :m - k] = clean
    rows[:, :, m - k:] = N + np.arange(R * n * k).reshape(R, n, k)
    X_ext = sp.vstack([X, _canary_rows(coords, R * n, d, canary_norm)]).tocsr()
    y = np.asarray(y, float)
    data = cs.star_from_rows(X_ext, np.concatenate([y, S.ravel()]), rows)
    plus = cs.star_from_rows(X_ext, np.concatenate([y, np.ones(S.size)]), rows)
    return HuangSetup(data, plus, S, coords, m, float(canary_norm))


# ------------------------------------------------------------------------------------------------- the runs
@dataclass
class Setting:
    """One (method, level) row: its noise, its claims and what the audit found."""

    method: str
    level: str                 # e.g. "paper_eps0.1" or "level_eps1"
    source: str                # "paper" or "frontier"
    delta: float
    noise: float               # z (HUANG) or sigma (XU) of the claimed noise
    paper_eps: float           # the paper's own accounting of that noise
    tight_eps: float           # exact total of the same noise under the sensitivity the claim should use
    paper_delta: float | None = None   # delta of the paper's total (None: the same as delta)
    extras: dict = field(default_factory=dict)       # method-specific numbers, written as <method>.<level>.<key>
    canary_eps: dict = field(default_factory=dict)   # variant -> tight epsilon at the canary's own gap (ceiling)
    audit: dict = field(default_factory=dict)        # variant -> OneRunResult
    seconds: dict = field(default_factory=dict)


def huang_dpadmm_scores(st: HuangSetup, hp: dict, T: int, z_claim: float, factor: float, rngs) -> np.ndarray:
    """Scores (R, n, k) of HUANG DP-ADMM run T iterations one call at a time (w-tilde_i^k, w^k, gamma_i^k public)."""
    reg, rho, lam_n = hp["reg"], float(hp["rho"]), float(hp["lam_n"])
    eta = hb.eta_schedule(reg, T, st.m, z=z_claim, lam_n=lam_n, d=st.data.d)   # Theorem 4 (34) from the claimed z
    R, n, k = st.S.shape
    state = {"w_tilde": np.zeros((R, n, st.data.d)), "w": np.zeros((R, st.data.d)),
             "gamma": np.zeros((R, n, st.data.d))}
    score = np.zeros((R, n, k))
    for t in range(T):
        h = cs.dpadmm(st.data, reg=reg, T=1, rngs=rngs, noise_multiplier=z_claim * factor, eta=eta[t:t + 1],
                      rho=rho, lam_n=lam_n, record=False, init=state)
        pred = cs.dpadmm_primal_update(st.plus, state["w_tilde"], state["w"], state["gamma"], eta[t], rho=rho,
                                       lam_n=lam_n, reg=reg)
        # residual m (rho + 1/eta) (w-tilde - pred): N(0, (2 c_1 z)^2) + (-1 on e_j if S = -1)
        score += (h.meta["w_tilde"] - pred)[..., st.coords] * (st.m * (rho + 1.0 / eta[t]))
        state = {"w_tilde": h.meta["w_tilde"], "w": h.meta["w"], "gamma": h.meta["gamma"]}
    return score


def huang_dpsgd_scores(st: HuangSetup, hp: dict, T: int, z_claim: float, factor: float, rngs) -> np.ndarray:
    """Scores (R, n, k) of HUANG DPSGD; the adversary sees every agent's message g-tilde_i^k (and so w^k).
    The loop is `sgd.dpsgd`'s, from its public single-step parts, to keep the messages (same draws, tested)."""
    reg, lam_n, lr = hp["reg"], float(hp["lam_n"]), float(hp.get("lr", 0.1))
    s = float(sgd.sigma(st.m, z=z_claim)) * factor
    R, n, k = st.S.shape
    w = np.zeros((R, st.data.d))
    score = np.zeros((R, n, k))
    for _ in range(T):
        g_tilde = sgd.local_gradients(st.data, w) + stacked_normal(rngs, (n, st.data.d), s)
        score += (g_tilde - sgd.local_gradients(st.plus, w))[..., st.coords] * (st.m / 2.0)
        w = sgd.update(w, g_tilde, lr=lr, lam_n=lam_n, reg=reg)
    return -score   # the clipped gap is -2 e_j / m for S = -1: higher score, more likely +1


@dataclass
class XuSetup:
    problems: list             # one FusedLasso per run (canary labels S[r])
    plus: fl.FusedLasso        # every canary labelled +1
    S: np.ndarray              # (R, k)
    coords: np.ndarray
    n: int


def xu_setup(X, y, xp: dict, seed: int) -> XuSetup:
    n, k, R = int(xp["rows"]), int(xp["canaries"]), int(xp["runs"])
    X = np.asarray(sp.csr_matrix(X).todense()) if sp.issparse(X) else np.asarray(X, float)
    rng = np.random.default_rng(seed_sequence(seed, PAPER, ITEM, "xu-rows"))
    idx = rng.choice(len(y), size=n - k, replace=False)
    clean, yc = fl.normalise_rows(X[idx]), np.asarray(y, float)[idx]
    coords = least_used(clean, k)
    canary = np.zeros((k, X.shape[1]))
    canary[np.arange(k), coords] = 1.0
    g = xp.get("graph", {})
    graph = fl.estimate_graph(clean, alphas=tuple(g.get("alphas", fl.ALPHA_GRID)), min_edges=clean.shape[1],
                              max_edges=5 * clean.shape[1], tol=float(g.get("tol", 1e-4)),
                              max_iter=int(g.get("max_iter", 200)))
    Xr = np.vstack([clean, canary])
    S = np.random.default_rng(seed_sequence(seed, PAPER, ITEM, "xu", "signs")).choice([-1.0, 1.0], size=(R, k))
    lam = float(xp["lam"])
    problems = [fl.build(Xr, np.concatenate([yc, S[r]]), lam, graph=graph)[0] for r in range(R)]
    plus = fl.build(Xr, np.concatenate([yc, np.ones(k)]), lam, graph=graph)[0]
    return XuSetup(problems, plus, S, coords, n)


def xu_scores(st: XuSetup, xp: dict, T: int, sigma: float, rngs) -> np.ndarray:
    """Scores (R, k): each run of `lin.xu_dp_admm` (x_t for all t public); the adversary rebuilds y_t, u_t."""
    rho, gamma = float(xp["rho"]), float(xp["gamma"])
    eta = 1.0 / st.plus.L_f                        # SPEC §0.5(2)
    A, At = st.plus.A, st.plus.A.T.tocsr()
    # one library call per run: each run's canary labels make its own problem (the library batches repeats of one
    # problem only); the adversary's side is batched over runs
    xs = np.stack([lin.xu_dp_admm(p, T=T, eta=eta, rho=rho, gamma=gamma, sigma=sigma, repeats=1, rngs=[g],
                                  u0=xp.get("u0", "paper")).x[0] for p, g in zip(st.problems, rngs)])  # (R, T+1, d)
    X = xs.transpose(1, 2, 0)                      # (T+1, d, R): columns are runs
    u = lin.initial_dual(st.plus, X[0], rho) if xp.get("u0", "paper") == "paper" else np.zeros((A.shape[0], len(xs)))
    score = np.zeros((len(xs), len(st.coords)))
    for t in range(1, T + 1):
        Ax = A @ X[t - 1]
        yv = st.plus.prox_g(Ax + u, rho)
        pred = lin.x_update(X[t - 1], st.plus.grad(X[t - 1].T).T, Ax - yv + u, At, eta, rho, gamma)
        # residual (gamma n / eta)(x_t - pred): N(0, (n sigma)^2) + (-1 on e_j if S = -1)
        score += ((X[t] - pred)[st.coords] * (gamma * st.n / eta)).T
        u = u + A @ X[t] - yv
    return score


# ------------------------------------------------------------------------------------------------- HU ADMM sharing
@dataclass
class HuSetup:
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


def hu_setup(X, y, up: dict, seed: int) -> HuSetup:
    N, k, R = int(up["rows"]), int(up["canaries"]), int(up["runs"])
    b = tuple(int(v) for v in up["boundaries"])
    rho, lam = float(up["rho"]), float(up["lam"])
    rng = np.random.default_rng(seed_sequence(seed, PAPER, ITEM, "hu-rows"))
    idx = rng.choice(len(y), size=N, replace=False)
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
    S = np.random.default_rng(seed_sequence(seed, PAPER, ITEM, "hu", "signs")).choice([-1.0, 1.0], size=(R, k))

    def with_signs(signs):
        Dr = D.copy()
        Dr[rb, cols] = 0.5 * signs
        return sh.setup(Dr, Y, b, rho=rho, lam=lam)

    plus = with_signs(np.ones(k))
    ref = sh.admm_sharing(plus.D, Y, b, rho=rho, lam=lam, iterations=int(up["iterations_b1"]), sigma=0.0,
                          noise_on="shared", runs=1, setup_=plus)
    from ..algorithms.sharing import observed_b1

    b1 = observed_b1(ref)
    C = np.asarray(hu_bounds.sensitivity_bound(lam, float(up["c1"]), b1, len(b) - 1, rho, np.diff(b)), float)
    return HuSetup([with_signs(S[r]) for r in range(R)], [plus] * R, S, cols, ra, rb, b, 2 * lam + rho / 2, b1, C)


def hu_scores(st: HuSetup, T: int, sigma_party: np.ndarray, rngs) -> tuple[np.ndarray, np.ndarray, float]:
    """Scores (R, k), each canary's sum_t ||Delta_{j,t}||^2 (R, k), and the largest ||x||, ||y||, ||z|| of the noisy
    runs (what Assumption 1.1's b_1 would have to bound), for runs of ADMM sharing with noise on the shared values;
    the adversary sees every party's shared value at every t."""
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


def hu_settings(params: dict, setup: HuSetup) -> list[Setting]:
    up, T = params["hu2020"], int(params["iterations"])
    C1 = float(setup.C[0])
    ad, dp, pd = float(params["level_delta"]), float(up["delta_prime"]), float(up["paper_delta"])
    out = []
    for eps in up.get("paper_epsilons", []):       # the authors' (epsilon, delta) runs: Theorem 1 per iteration
        s = float(hu_bounds.theorem1_sigma(C1, float(eps), pd, strict=False))
        out.append(Setting("hu_sharing", f"paper_eps{eps:g}", "paper", ad, s,
                           hu_bounds.corollary1_epsilon(float(eps), T, dp), tight(s / C1, ad, T),
                           paper_delta=hu_bounds.corollary1_delta(pd, T, dp)))
    for lev in params["levels"]:                   # sigma / C calibrated to the level (tight)
        z = level_multiplier(float(lev), ad, T)
        # the paper's own total for that noise: Theorem 1 per iteration at delta_s = ad / (2T), Corollary 1 with
        # delta' = ad / 2, so that its total delta T delta_s + delta' is the level's delta
        eps_s = float(hu_bounds.epsilon_for_sigma(1.0, z, ad / (2 * T)))
        out.append(Setting("hu_sharing", f"level_eps{lev:g}", "frontier", ad, z * C1,
                           hu_bounds.corollary1_epsilon(eps_s, T, ad / 2), tight(z, ad, T), paper_delta=ad))
    return out


# ------------------------------------------------------------------------------------------------- settings grid
# Tight totals: every mechanism audited is T composed Gaussian mechanisms, whose exact epsilon is the analytic
# Gaussian of mu = sqrt(T) / z (`accounting.analytic_gaussian_epsilon`, checked against dp-accounting's PLD in
# tests/test_accounting.py); it is exact where PLD is a slightly pessimistic discretisation, and 100x faster.
def tight(z: float, delta: float, T: int) -> float:
    return accounting.analytic_gaussian_epsilon(z, delta, steps=T)


def level_multiplier(level: float, delta: float, T: int) -> float:
    """The z whose T-fold composition has exactly total `level` at `delta` (the frontier's calibration, without
    PLD's discretisation)."""
    return calibrate.solve(lambda z: tight(z, delta, T), level, lo=1.0, hi=2.0, increasing=False, rtol=1e-6).value


def huang_settings(method: str, params: dict) -> list[Setting]:
    hp, T = params["huang2019"], int(params["iterations"])
    out = []
    pd = float(hp["paper_delta"])
    for eps in hp.get("paper_epsilons", []):
        z = hb.noise_multiplier(float(eps), pd)
        out.append(Setting(method, f"paper_eps{eps:g}", "paper", pd, z, hb.eps_bar(z=z, T=T, total_delta=pd),
                           tight(z, pd, T)))
    ld = float(params["level_delta"])
    for lev in params["levels"]:
        z = level_multiplier(float(lev), ld, T)
        out.append(Setting(method, f"level_eps{lev:g}", "frontier", ld, z, hb.eps_bar(z=z, T=T, total_delta=ld),
                           tight(z, ld, T)))
    return out


def xu_settings(params: dict) -> list[Setting]:
    xp, T = params["xu2020"], int(params["iterations"])
    n, c, mu = int(xp["rows"]), float(xp.get("c", 1.0)), float(xp["mu"])
    out = []
    pd = float(xp["paper_delta"])
    for eps in xp.get("paper_epsilons", []):       # Theorem 1 as stated: Delta = c/n
        s = xu_bounds.sigma(float(eps), T, n, delta=pd, mu=mu, c=c, sensitivity_factor=1)
        out.append(Setting("xu_dpadmm", f"paper_eps{eps:g}", "paper", pd, s, float(eps),
                           tight(s / xu_bounds.sensitivity(n, c, 2), pd, T)))
    ld = float(params["level_delta"])
    for lev in params["levels"]:                   # the frontier's corrected runs: Delta = 2c/n, tight
        s = level_multiplier(float(lev), ld, T) * xu_bounds.sensitivity(n, c, 2)
        out.append(Setting("xu_dpadmm", f"level_eps{lev:g}", "frontier", ld, s,
                           xu_bounds.accounted_epsilon(s, T, n, ld, c, sensitivity_factor=2, method="rdp"),
                           tight(s / xu_bounds.sensitivity(n, c, 2), ld, T)))
    return out


def canary_multiplier(setting: Setting, params: dict, factor: float) -> float:
    """sigma / (the canary pair's per-step gap) for this setting and noise factor."""
    if setting.method == "huang_dpadmm":
        return 2.0 * setting.noise * factor          # gap 1/(m(rho + 1/eta)) vs sigma = 2 z / (m(rho + 1/eta))
    if setting.method == "huang_dpsgd":
        return setting.noise * factor                # gap 2/m (clipped) vs sigma = 2 z / m
    return setting.noise * factor * int(params["xu2020"]["rows"])   # gap 1/n vs sigma


def run(params: dict, seed: int, data: dict) -> dict:
    """Every (method, level, variant): {"settings": [Setting], "skipped": {method: reason}}. `data`: {name: (X, y)}
    with adult_huang2019 (HUANG, XU) and, if `hu2020` is configured, a9a (HU)."""
    check_params(params)
    T, level = int(params["iterations"]), 1.0 - float(params["confidence"])
    factors = {"claimed": 1.0, "control": float(params["control_noise_factor"])}
    hp, xp = params["huang2019"], params["xu2020"]
    setups, grid, skipped = {}, [], {}
    with threadpool_limits(int(params.get("blas_threads", 1))):
        if "adult_huang2019" in data:
            X, y = data["adult_huang2019"]
            setups = {"huang_dpadmm": huang_setup(X, y, hp, seed, 1.0, "dpadmm"),
                      "huang_dpsgd": huang_setup(X, y, hp, seed, float(hp.get("dpsgd_canary_norm", 5.0)), "dpsgd"),
                      "xu_dpadmm": xu_setup(X, y, xp, seed)}
            grid = huang_settings("huang_dpadmm", params) + huang_settings("huang_dpsgd", params) + \
                xu_settings(params)
        else:
            skipped.update({m: "dataset adult_huang2019 unavailable" for m in ("huang_dpadmm", "huang_dpsgd",
                                                                                  "xu_dpadmm")})
        if "hu2020" in params:
            if "a9a" in data:
                setups["hu_sharing"] = hu_setup(*data["a9a"], params["hu2020"], seed)
                grid += hu_settings(params, setups["hu_sharing"])
            else:
                skipped["hu_sharing"] = "dataset a9a unavailable"
        for st in grid:
            setup = setups[st.method]
            for variant, f in factors.items():
                t0 = time.perf_counter()
                rngs = repeat_generators(seed, len(setup.S), PAPER, ITEM, st.method, st.level, variant)
                mult = None
                if st.method == "huang_dpadmm":
                    sc = huang_dpadmm_scores(setup, hp, T, st.noise, f, rngs)
                elif st.method == "huang_dpsgd":
                    sc = huang_dpsgd_scores(setup, hp, T, st.noise, f, rngs)
                elif st.method == "xu_dpadmm":
                    sc = xu_scores(setup, xp, T, st.noise * f, rngs)
                else:
                    sigma = st.noise * f * setup.C / setup.C[0]             # every party at the same epsilon
                    key = "noisy_b1" if variant == "claimed" else "control.noisy_b1"
                    sc, energy, st.extras[key] = hu_scores(setup, T, sigma, rngs)
                    # the canaries' own composed Gaussian: mu^2 = mean over canaries of sum_t ||Delta_t||^2 / sigma^2
                    mult = st.noise * f * np.sqrt(T / float(energy.mean()))
                st.audit[variant] = ora.audit(sc, setup.S, st.delta, level)
                st.canary_eps[variant] = tight(mult or canary_multiplier(st, params, f), st.delta, T)
                st.seconds[variant] = time.perf_counter() - t0
    return {"settings": grid, "skipped": skipped, "hu": setups.get("hu_sharing")}


# ------------------------------------------------------------------------------------------------- outputs
def metrics(out: dict, params: dict) -> dict:
    """Flat metrics, keys `<method>.<level>.<name>` (documented in config/claims/beyond.yaml).

    Per method and level, the audit's reading of the claim: `contradicted` (the audited bound exceeds the paper's
    total, or the tight total of the claimed noise), `supported` (not contradicted, and the 4x control exceeds the
    tight total of the claimed noise at the same level: this audit would have caught a 4x under-noising there),
    `untestable` (neither: no violation found, but the audit lacks the power to tell). Per method: the counts."""
    m = {"iterations": int(params["iterations"]), "confidence": float(params["confidence"]),
         "control_noise_factor": float(params["control_noise_factor"])}
    for st in out["settings"]:
        p = f"{st.method}.{st.level}."
        m.update({p + "delta": st.delta, p + "paper_delta": st.paper_delta or st.delta,
                  p + "noise": st.noise, p + "paper_eps": st.paper_eps,
                  p + "tight_eps": st.tight_eps, p + "seconds": float(sum(st.seconds.values()))})
        for variant in VARIANTS:
            q = p + ("" if variant == "claimed" else "control.")
            a = st.audit[variant]
            m.update({q + "eps_lo": a.eps_lo, q + "canary_eps": st.canary_eps[variant], q + "guesses": a.guesses,
                      q + "correct": a.correct,
                      # (eps_lo, delta) refuted refutes (paper_eps, paper_delta) only if paper_delta <= delta
                      q + "flagged": bool(a.eps_lo > st.paper_eps and (st.paper_delta or st.delta) <= st.delta),
                      q + "flagged_tight": bool(a.eps_lo > st.tight_eps)})
        m.update({p + key: v for key, v in st.extras.items()})
        m[p + "reading"] = ("contradicted" if m[p + "flagged"] or m[p + "flagged_tight"] else
                            "supported" if m[p + "control.flagged_tight"] else "untestable")
    for meth in METHODS:
        sts = [st for st in out["settings"] if st.method == meth]
        if sts:
            m[f"{meth}.canaries"] = sts[0].audit["claimed"].canaries
            for reading in ("contradicted", "supported", "untestable"):
                m[f"{meth}.{reading}"] = sum(m[f"{meth}.{st.level}.reading"] == reading for st in sts)
    if out.get("hu") is not None:
        m["hu_sharing.b1"] = out["hu"].b1
        m["hu_sharing.lemma1_C"] = float(out["hu"].C[0])
    m["seconds_total"] = float(sum(sum(st.seconds.values()) for st in out["settings"]))
    return m


def table_markdown(out: dict, m: dict) -> str:
    lines = ["| method | level | delta | paper's total eps | tight eps | ceiling (canary gap) | audited eps >= | "
             "correct / guesses (canaries) | 4x control: ceiling | 4x control: audited eps >= | reading |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for st in out["settings"]:
        p = f"{st.method}.{st.level}."
        flag = lambda q: (" **(exceeds the paper's claim)**" if m[q + "flagged"] else  # noqa: E731
                          " **(exceeds the tight total)**" if m[q + "flagged_tight"] else "")
        lines.append(f"| {METHODS[st.method]} | {st.level} | {st.delta:g} | {st.paper_eps:.3g} | {st.tight_eps:.3g} | "
                     f"{m[p + 'canary_eps']:.3g} | {m[p + 'eps_lo']:.3f}{flag(p)} | {m[p + 'correct']} / "
                     f"{m[p + 'guesses']} ({m[st.method + '.canaries']}) | {m[p + 'control.canary_eps']:.3g} | "
                     f"{m[p + 'control.eps_lo']:.3f}{flag(p + 'control.')} | {m[p + 'reading']} |")
    return "\n".join(lines)


def plot(out: dict, m: dict):
    """Claimed vs audited total epsilon, one panel per method: paper's total, tight total, the canary ceiling and the
    audited bounds (noise as claimed and 4x control) per level."""
    import matplotlib.pyplot as plt

    methods = [k for k in METHODS if any(s.method == k for s in out["settings"])]
    fig, axes = plt.subplots(1, len(methods), figsize=(4.6 * len(methods), 5.2), squeeze=False)
    for ax, meth in zip(axes[0], methods):
        sts = [s for s in out["settings"] if s.method == meth]
        x = np.arange(len(sts))
        def get(name, ctl=False, meth=meth, sts=sts):
            return np.array([m[f"{meth}.{s.level}." + ("control." if ctl else "") + name] for s in sts])

        ax.plot(x, get("paper_eps"), "k_", ms=18, mew=2.5, label="claimed: paper's total")
        ax.plot(x, get("tight_eps"), "D", mfc="none", color="tab:blue", label="claimed noise, tight total")
        ax.plot(x, get("canary_eps"), "s", mfc="none", color="tab:green",
                label="ceiling: tight total at the canary gap")
        ax.plot(x, np.maximum(get("eps_lo"), 1e-3), "o", color="tab:blue", label="audited lower bound")
        ax.plot(x, np.maximum(get("eps_lo", True), 1e-3), "v", color="tab:red", label="audited, 4x control")
        ax.plot(x, get("canary_eps", True), "s", mfc="none", color="tab:red", alpha=0.5,
                label="4x control: ceiling")
        ax.set_xticks(x, [s.level.replace("_", "\n") for s in sts], fontsize=7)
        ax.set_yscale("log")
        ax.set_title(METHODS[meth], fontsize=10)
        ax.set_ylabel(f"total epsilon over T = {m['iterations']} (bounds at {m['confidence']:.0%})")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle("Whole-run one-run audit: claimed vs audited epsilon (audited 0 drawn at 1e-3)", fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def describe(out: dict, m: dict) -> str:
    """The closing paragraphs, every number from the metrics: per method which claimed totals the whole-run audit
    supports, which it cannot test at this power and which it contradicts."""
    parts = []
    for meth, label in METHODS.items():
        sts = [s for s in out["settings"] if s.method == meth]
        if not sts:
            continue
        p = lambda s, n, c=False: m[f"{meth}.{s.level}." + ("control." if c else "") + n]  # noqa: E731
        groups = {r: [s for s in sts if p(s, "reading") == r] for r in ("supported", "untestable", "contradicted")}
        names = lambda ss: ", ".join(s.level for s in ss) or "no level"  # noqa: E731
        txt = (f"**{label}** ({m[meth + '.canaries']:,} canaries per bound). Supported (no violation, and the 4x "
               f"control is flagged at the same level): {names(groups['supported'])}. Not testable at this power "
               f"(no violation, control missed): {names(groups['untestable'])}. Contradicted: "
               f"{names(groups['contradicted'])}.")
        for s in groups["contradicted"]:
            txt += (f" At {s.level} the audited total is >= {p(s, 'eps_lo'):.3f} against a tight total of "
                    f"{s.tight_eps:.3g} and a paper's total of {s.paper_eps:.3g} (delta {s.delta:g}).")
        reach = [p(s, "control.eps_lo") / p(s, "control.canary_eps") for s in sts if p(s, "control.canary_eps") > 0]
        best = max(sts, key=lambda s: p(s, "eps_lo"))
        txt += (f" Largest audited bound with the claimed noise: {p(best, 'eps_lo'):.3f} at {best.level} (tight "
                f"total {best.tight_eps:.3g}; the canaries' own ceiling {p(best, 'canary_eps'):.3g}). The one-run "
                f"bound recovers at most {max(reach):.0%} of the control's ceiling.")
        parts.append(txt)
    if out.get("hu") is not None and "hu_sharing.lemma1_C" in m:
        hs = [s for s in out["settings"] if s.method == "hu_sharing"]
        nb = [m[f"hu_sharing.{s.level}.noisy_b1"] for s in hs]
        parts.append(f"HU: Lemma 1's C = {m['hu_sharing.lemma1_C']:.3g} for party 1 from b_1 = "
                     f"{m['hu_sharing.b1']:.3g}, the largest ||x||, ||y||, ||z|| of the noise-free run. In the runs "
                     f"with the calibrated noise these norms reach {min(nb):.3g} to {max(nb):.3g}, "
                     f"{min(nb) / m['hu_sharing.b1']:.0f}x to {max(nb) / m['hu_sharing.b1']:.0f}x that b_1: "
                     f"Assumption 1.1 does not hold for the noisy iterates. A party's next release is its data's "
                     f"ridge map applied to the pulled sum, which carries the noise, so the canaries' own ceiling "
                     f"does not fall as the noise grows (ceiling column).")
    parts.append("A bound below the claim says only that these canaries and this score found no violation. The "
                 "ceiling is the tight total at the canary pair's own gap, the most any audit with these canaries "
                 "could show; the one-run bound recovers a fraction of it, and never more than its guess count "
                 "allows.")
    if out["skipped"]:
        parts.append("Not run: " + "; ".join(f"{k} ({v})" for k, v in out["skipped"].items()) + ".")
    return "\n\n".join(parts)
