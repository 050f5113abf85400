"""(Differentially private) ADMM sharing over vertically partitioned features.

Hu, Liu, Ge, Kong, Jiang, Niu, "Learning Privately over Distributed Features: An ADMM Sharing Approach",
eqs. (6)-(9) and Algorithm 1 (docs/choices.md#hu-admm-sharing). M parties hold column blocks D_m of the data D = [D_1, ..., D_M]; the
model is x = (x_1; ...; x_M). The problem, in the sum form the authors' code uses (docs/choices.md#hu-authors-code), is

    minimise  l(z) + lam * sum_m ||x_m||^2   s.t.  sum_m D_m x_m - z = 0,   l(z) = sum_i ln(1 + exp(-Y_i z_i)),

and iteration t -> t+1 is, for all parties in parallel (Jacobi: each uses the others' previous noisy values):

    (6) x_m^{t+1} = argmin lam ||x_m||^2 + <y^t, D_m x_m> + rho/2 ||sum_{k != m} D_k x~_k^t + D_m x_m - z^t||^2
    (7) the party pushes its shared value with noise (three readings, `noise_on`, below)
    (8) z^{t+1} = argmin_z l(z) - <y^t, z> + rho/2 ||s^{t+1} - z||^2,   s^{t+1} = sum_m (party m's pushed value)
    (9) y^{t+1} = y^t + rho (s^{t+1} - z^{t+1})

Where the noise goes (docs/choices.md#hu-noise-placement):
* noise_on="shared" (default): party m pushes D_m x_m^{t+1} + xi_m, xi_m ~ N(0, sigma_m^2 I_N), independent noise on
  each sample's shared value. This is the mechanism Theorem 1 analyses, what §3 says ("we perturb the shared value
  D_m x_m") and what the authors' noise sweeps ran.
* noise_on="params": eq. (7) read literally, x~_m = x_m + N(0, sigma_m^2 I), pushed as D_m x~_m; the release then
  carries noise of variance sigma^2 ||D_m^i||^2 on sample i. Neither the authors' runs nor Theorem 1.
* noise_on="authors": the calibration of the authors' (epsilon, delta) runs, x~_m = x_m + xi_m with
  xi_m ~ N(0, sigma_{m,t}^2 (D_m^T D_m)^+), pushed as D_m x~_m, and sigma_{m,t} recomputed every iteration from the
  iterates (`authors_sigma`). `sigma` is then the noise multiplier sqrt(2 ln(1.25/delta)) / epsilon. Not covered by
  the paper's proof: the pushed noise D_m xi_m lies in the column space of D_m (total variance sigma^2 rank(D_m), not
  sigma^2 N).

Privacy as data: with `noise_on="shared"` and Assumption 1.1's bound `b1` given, a run records each party's release
as a `privacy.spend.Spend` (T Gaussian steps with multiplier sigma_m / C_m, C_m Lemma 1's sensitivity bound; see
privacy/bounds/hu2020.py), naming Corollary 1 as the paper bound when Theorem 1's delta and Corollary 1's delta' are
given. The other two readings put noise of another shape on the shared value (covariance sigma^2 D_m D_m^T, or in
the column space of D_m), which no Gaussian event of Theorem 1 describes: they record nothing.

The z-step penalty: the paper's (8) has rho/2 ||s - z||^2 (`z_penalty="paper"`, default); the authors' code
minimises 2 rho (s_i - z_i)^2 per sample, i.e. a curvature 4 rho (`z_penalty="code"`, an ablation).

Every party's x-update is solved exactly: with K_m = 2 lam I + rho D_m^T D_m (factored once with Cholesky),

    x_m^{t+1} = K_m^{-1}(-D_m^T (y + rho r_m)),   r_m = sum_{k != m} D_k x~_k - z = s - z - D_m x~_m,

which we write as x_m^{t+1} = x~_m - K_m^{-1}(D_m^T v + 2 lam x~_m) with v = y + rho (s - z), the same number,
so all parties are solved at once against the block-diagonal K = diag(K_1, ..., K_M) without a loop over parties.
(The paper solves (6) with L-BFGS-B; the closed form is its exact solution.) The z-update separates over samples
and is solved by a safeguarded, vectorised Newton method for all samples (and repeats) at once.

The authors' solvers (`solvers="code"`, the runs "as the authors ran them"). Their prototype (hyclex/
fdml_dp_admm_sharing, Python 2) solves (6) and (8) inexactly, and its published runs depend on it:
* (6) by scipy's L-BFGS-B from the party's previous noise-free x_m, with the gradient
  2 lam x + D_m^T (y + rho (r_m + D_m x)) but the function value lam ||x|| + <y, D_m x> + (rho / 2) ||r_m + D_m x||^2
  evaluated in Python 2, where `rho / 2` with the integer rho = 1 of their configuration is 0: the line search
  compares values of lam ||x|| + <y, D_m x> against the quadratic's gradient. Most calls end in a line-search failure
  ("ABNORMAL_TERMINATION_IN_LNSRCH"), a large share of them at the starting point (x_m unchanged), which damps the
  iteration. (`x_fval_weight` is that weight: rho // 2 for an integer rho, rho / 2 otherwise.) The function value and
  gradient are computed from the party's Gram matrix D_m^T D_m (the same numbers up to rounding; 100x faster).
* (8) one sample at a time by scipy's minimize_scalar (Brent; xtol = 1e-2, at most 10 iterations;
  kernels/hu_sharing.brent_z), with the z_penalty as configured (theirs is "code": 2 rho).
These solvers stop without meeting a tolerance by design, an exception to the rule that solvers fail loudly
(solvers.py): they are what the published runs ran. Nothing is hidden: every run records, per update, the share of
x-solves that ended abnormally or did not move and of z-solves that stopped at Brent's iteration cap
(meta["solver_stats"]). With the exact solvers (default) the same iteration is solved exactly.

Every array carries a leading run axis (repeats and/or noise levels): x is (R, d), z, y, s are (R, N).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit

from ..datasets.partition import vertical
from ..history import History
from ..privacy.bounds import hu2020
from ..problems.logistic import loss, sigmoid_neg
from ..rng import stacked_normal
from ..solvers import NotConvergedError, require_converged

NOISE_TARGETS = ("shared", "params", "authors")
Z_PENALTIES = {"paper": 1.0, "code": 4.0}    # curvature of the z-step's penalty in units of rho: rho/2 vs 2 rho
SOLVERS = ("exact", "code")                  # exact solves, or the authors' prototype's solvers (module docstring)
BRENT_XTOL, BRENT_MAXITER = 1e-2, 10         # the authors' minimize_scalar options for (8)


def _mv(D, X):
    """D x for every run: X (R, d) -> (R, N); D dense or sparse."""
    return np.asarray(D @ X.T).T


def _rmv(D, V, Dt=None):
    """D^T v for every run: V (R, N) -> (R, d); `Dt` a precomputed D^T."""
    return np.asarray((D.T if Dt is None else Dt) @ V.T).T


def check_labels(Y, N: int) -> np.ndarray:
    Y = np.asarray(Y, dtype=float)
    if Y.shape != (N,):
        raise ValueError(f"labels must have shape ({N},) to match the data, got {Y.shape}")
    if not np.all(np.abs(Y) == 1.0):
        raise ValueError("labels must be +1 or -1 (the loss absorbs the label: l_i(z) = ln(1 + exp(-Y_i z)))")
    return Y


@dataclass(frozen=True)
class SharingSetup:
    """One-time work of Algorithm 1: the partition and each party's factored x-update matrix."""

    D: object                 # (N, d) ndarray or scipy.sparse matrix; parties' blocks side by side
    Y: np.ndarray             # (N,) labels in {-1, +1}
    boundaries: tuple         # party m owns columns [b_m, b_{m+1})
    party: np.ndarray         # (d,) index of the party owning each feature
    rho: float
    lam: float                # weight of ||x||^2 next to the *summed* loss
    K_cho: tuple              # cho_factor of blockdiag(2 lam I + rho D_m^T D_m)
    Dt: object                # D^T, stored row-major for fast products when D is sparse
    z_rho: float = 0.0        # curvature of the z-step's penalty: rho (paper) or 4 rho (authors' code)
    pinv_half: np.ndarray | None = None   # blockdiag of V_m S_m^+ (D_m = U S V^T): xi = sigma W h has covariance
                                          # sigma^2 (D_m^T D_m)^+ for h ~ N(0, I); only for noise_on="authors"
    solvers: str = "exact"                # "exact" or "code" (the authors' L-BFGS-B and Brent, module docstring)
    gram: tuple | None = None             # (D_m^T D_m) per party, dense; only for solvers="code"
    x_fval_weight: float = 0.0            # weight of ||r_m + D_m x||^2 in the authors' x-step function value

    @property
    def M(self) -> int:
        return len(self.boundaries) - 1

    @property
    def d_m(self) -> np.ndarray:
        return np.diff(self.boundaries)


def python2_half(rho: float) -> float:
    """`rho / 2` as the authors' Python 2 code evaluates it: integer division for an integer rho (0 for rho = 1)."""
    return float(int(rho) // 2) if float(rho).is_integer() else float(rho) / 2.0


def setup(D, Y, boundaries: Sequence[int], *, rho: float, lam: float, z_penalty: str = "paper",
          pinv_half: bool = False, solvers: str = "exact") -> SharingSetup:
    """Validate the inputs and factor each party's x-update matrix once (Cholesky, reused every iteration).
    `pinv_half`: also factor (D_m^T D_m)^+ (eigendecomposition of each party's Gram matrix) for noise_on="authors".
    `solvers`: "exact", or "code" for the authors' L-BFGS-B and Brent (keeps each party's Gram matrix)."""
    if solvers not in SOLVERS:
        raise ValueError(f"solvers must be one of {SOLVERS} (exact solves, or the authors' prototype's L-BFGS-B and "
                         f"Brent), got {solvers!r}")
    if z_penalty not in Z_PENALTIES:
        raise ValueError(f"z_penalty must be one of {sorted(Z_PENALTIES)} (paper: rho/2 ||s - z||^2; code: the "
                         f"authors' 2 rho ||s - z||^2), got {z_penalty!r}")
    if not np.isfinite(rho) or rho <= 0:
        raise ValueError(f"the ADMM penalty rho must be > 0, got {rho}")
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"the regularisation weight lambda must be >= 0, got {lam}")
    if D.ndim != 2:
        raise ValueError(f"data must be a 2-d (samples x features) matrix, got shape {D.shape}")
    N, d = D.shape
    Y = check_labels(Y, N)
    blocks = vertical(d, boundaries)           # clear error unless the split covers every column exactly
    b = tuple(int(v) for v in boundaries)
    party = np.repeat(np.arange(len(blocks)), np.diff(b))
    K = np.zeros((d, d))
    W = np.zeros((d, d)) if pinv_half else None
    grams = []
    for blk in blocks:                         # one-time: Gram matrix of each party's own block
        Dm = D[:, blk]
        G = Dm.T @ Dm
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        if solvers == "code":
            grams.append(G.copy())
        K[np.ix_(blk, blk)] = rho * G
        if pinv_half:                          # G = V S^2 V^T; (D_m^T D_m)^+ = (V S^+)(V S^+)^T
            ev, V = np.linalg.eigh(G)
            keep = ev > ev.max(initial=0.0) * len(blk) * np.finfo(float).eps * 10
            W[np.ix_(blk, blk)] = V * np.where(keep, 1.0 / np.sqrt(np.where(keep, ev, 1.0)), 0.0)
    K[np.diag_indices(d)] += 2.0 * lam
    try:
        K_cho = cho_factor(K, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError("2 lam I + rho D_m^T D_m is singular for some party: use lam > 0 when a party's "
                         "columns are linearly dependent") from None
    Dt = D.T.tocsr() if sp.issparse(D) else D.T
    return SharingSetup(D, Y, b, party, float(rho), float(lam), K_cho, Dt, Z_PENALTIES[z_penalty] * float(rho), W,
                        solvers, tuple(grams) if solvers == "code" else None, python2_half(rho))


def z_update(s, y, Y, rho: float, *, z0=None, max_steps: int = 100, tol: float = 1e-12, compiled: bool = True):
    """Eq. (8) for every sample and run at once: argmin_zeta ln(1 + e^{-Y_i zeta}) - y_i zeta + rho/2 (s_i - zeta)^2.

    Newton's method. The curvature lies in [rho, rho + 1/4], so for rho > 1/4 each Newton step contracts the error
    by at least 1/(4 rho) from any start and plain Newton is used (a handful of steps). For smaller rho, steps are
    safeguarded by the bracket [s + (y - 1)/rho, s + (y + 1)/rho], which holds the root because the loss slope lies
    in (-1, 1); as in Numerical Recipes' rtsafe, a step leaving the bracket or not halving the step before it is
    replaced by bisection (at most `max_steps` steps, 100 by default [D]: docs/choices.md#hu-admm-sharing).
    `z0` (e.g. the previous z) is the starting point. Stops when every sample's relative step is below `tol`;
    raises `NotConvergedError` if that takes more than `max_steps` steps.
    The plain path runs compiled (kernels/hu_sharing.py: one pass per step, bit-identical to the numpy loop below,
    which `compiled=False` runs and the tests compare it with).
    """
    c = -y - rho * s                                   # g'(zeta) = -Y sigma(-Y zeta) + rho zeta + c
    lo, hi = (s + (y - 1.0) / rho, s + (y + 1.0) / rho) if rho <= 0.25 else (None, None)
    zeta = s + y / rho if z0 is None else (np.clip(z0, lo, hi) if lo is not None else np.array(z0, dtype=float))
    if lo is None and compiled:
        from ..kernels.hu_sharing import newton_z

        converged, change = newton_z(zeta, c, Y, rho, max_steps, tol)   # in place on zeta
        if converged:
            return zeta
        raise NotConvergedError("ADMM sharing z-update (8), entrywise Newton", max_steps, change, tol,
                                "the relative Newton step did not fall below the tolerance")
    dx_old = None if lo is None else hi - lo
    for _ in range(max_steps):
        # sigma(-Y zeta) with the C library's exp (scipy's expit), as the compiled kernel: this loop is its reference
        p = expit(-(Y * zeta))
        step = (rho * zeta + c - Y * p) / (p * (1.0 - p) + rho)
        new = zeta - step
        if lo is not None:                             # step has the sign of g'(zeta)
            lo = np.where(step < 0, zeta, lo)
            hi = np.where(step > 0, zeta, hi)
            bisect = (new < lo) | (new > hi) | (2.0 * np.abs(step) > dx_old)
            new = np.where(bisect, 0.5 * (lo + hi), new)
            dx_old = np.where(bisect, 0.5 * (hi - lo), np.abs(step))
        change = np.max(np.abs(new - zeta) / (1.0 + np.abs(zeta)), initial=0.0)
        zeta = new
        if change <= tol:
            return zeta
    raise NotConvergedError("ADMM sharing z-update (8), entrywise Newton", max_steps, change, tol,
                            "the relative Newton step did not fall below the tolerance")


@dataclass
class SharingState:
    x: np.ndarray        # (R, d) noise-free x^{t}
    xt: np.ndarray       # (R, d) x~^{t}: the parameters behind the shared values (= x when noise_on="shared")
    xi: np.ndarray | None  # (R, N, M) noise on the shared values (noise_on="shared"), else None
    s: np.ndarray        # (R, N) sum_m of the shared values
    z: np.ndarray        # (R, N)
    y: np.ndarray        # (R, N)
    sig: np.ndarray | None = None   # (R, M) noise standard deviation each party used in the last local update
    stats: dict | None = None       # solvers="code": {"x_abnormal", "x_unchanged"} (R, M) bool, "z_maxiter" (R,)


def initial_state(st: SharingSetup, runs: int, noise_on: str = "shared") -> SharingState:
    """x, y and z start at 0 (HU §5: "we initialize the elements in x, y and z with 0")."""
    N, d = st.D.shape
    zeros = lambda *shape: np.zeros(shape)  # noqa: E731
    xi = zeros(runs, N, st.M) if noise_on == "shared" else None
    return SharingState(zeros(runs, d), zeros(runs, d), xi, zeros(runs, N), zeros(runs, N), zeros(runs, N))


def party_products(st: SharingSetup, X: np.ndarray) -> np.ndarray:
    """D_m x_m for every run and party: X (R, d) -> (R, M, N), one sparse/dense product for all parties."""
    R, d = X.shape
    masked = np.where(st.party[None, None, :] == np.arange(st.M)[None, :, None], X[:, None, :], 0.0)
    return _mv(st.D, masked.reshape(R * st.M, d)).reshape(R, st.M, -1)


def authors_sigma(st: SharingSetup, state: SharingState, x_new: np.ndarray, multiplier, c1: float = 2.0):
    """sigma_{m,t} of the authors' (epsilon, delta) runs (docs/choices.md#hu-authors-eps-runs), for every run and party (R, M):

        sigma_{m,t} = multiplier * 3 / (d_m rho) * (c_1 lam + ||y^t|| + rho ||s^t - D_m x_m^{t+1}||),

    multiplier = sqrt(2 ln(1.25/delta)) / epsilon, s^t the pulled shared sum, d_m counting the bias column (whatever
    the party's block holds). Lemma 1's bound with the current norms in place of b_1: data dependent, so not covered
    by Theorem 1's proof."""
    own = party_products(st, x_new)                                       # (R, M, N)
    gap = np.linalg.norm(state.s[:, None, :] - own, axis=-1)             # ||s^t - D_m x_m^{t+1}||
    delta_t = 3.0 / (st.d_m[None, :] * st.rho) * (c1 * st.lam + np.linalg.norm(state.y, axis=-1)[:, None]
                                                   + st.rho * gap)
    return np.asarray(multiplier, float) * delta_t


def local_update(st: SharingSetup, state: SharingState, sigma_feat, rngs, noise_on: str = "shared",
                 sigma_party=None, c1: float = 2.0) -> SharingState:
    """The parties' half of one iteration (Algorithm 1, lines 3-6): (6) and (7) for all parties and runs at once.

    Returns the new x, x~, the shared-value noise xi and the shared sum s = sum_m (D_m x~_m [+ xi_m]); z and y are
    carried over unchanged (the centre's half, `centre_update`, renews them). Party m pushes D_m x~_m (+ xi_m), the
    only quantity of an iteration that reads D_m: the release Theorem 1 analyses.
    `sigma_feat` (R, d): the noise standard deviation of each coordinate of x_m (noise_on="params");
    `sigma_party` (R, M): the noise standard deviation on each party's shared value (noise_on="shared"), or the
    noise multiplier of `authors_sigma` (noise_on="authors", with `c1`).
    """
    rho, lam = st.rho, st.lam
    stats = None
    if st.solvers == "code":
        x, stats = _x_update_code(st, state, noise_on)
    else:
        # (6), all parties at once: x_m = x~_m - K_m^{-1}(D_m^T (y + rho (s - z)) + 2 lam x~_m); a party's own cached
        # shared value is D_m x~_m (+ its shared noise), which it subtracts from the pulled sum (Alg. 1, line 4).
        v = state.y + rho * (state.s - state.z)
        g = _rmv(st.D, v, st.Dt) + 2.0 * lam * state.xt
        if noise_on == "shared" and state.xi is not None:          # None: no noise on the cached shares yet
            R, N, M = state.xi.shape
            W = _rmv(st.D, state.xi.transpose(0, 2, 1).reshape(R * M, N), st.Dt).reshape(R, M, -1)  # D^T xi_m
            g = g - rho * np.take_along_axis(W, st.party[None, None, :], axis=1)[:, 0, :]     # party m keeps its own
        x = state.xt - cho_solve(st.K_cho, g.T, check_finite=False).T
    # (7) perturbation, then the shared sum s = sum_m (pushed value of party m)
    if noise_on == "params":
        xt = x + stacked_normal(rngs, (x.shape[1],)) * sigma_feat if rngs is not None else x
        return SharingState(x, xt, None, _mv(st.D, xt), state.z, state.y, None if rngs is None else sigma_party,
                            stats)
    if noise_on == "authors":
        if st.pinv_half is None:
            raise ValueError("noise_on='authors' needs setup(..., pinv_half=True)")
        sig = authors_sigma(st, state, x, sigma_party, c1)
        if rngs is None:
            return SharingState(x, x, None, _mv(st.D, x), state.z, state.y, sig, stats)
        h = stacked_normal(rngs, (x.shape[1],)) * sig[:, st.party]      # xi_m = sigma_{m,t} V_m S_m^+ h_m
        xt = x + h @ st.pinv_half.T
        return SharingState(x, xt, None, _mv(st.D, xt), state.z, state.y, sig, stats)
    xi = (stacked_normal(rngs, (st.D.shape[0], st.M)) * sigma_party[:, None, :] if rngs is not None
          else np.zeros((x.shape[0], st.D.shape[0], st.M)))
    return SharingState(x, x, xi, _mv(st.D, x) + xi.sum(axis=-1), state.z, state.y,
                        None if rngs is None else sigma_party, stats)


def _x_update_code(st: SharingSetup, state: SharingState, noise_on: str) -> tuple[np.ndarray, dict]:
    """(6) as the authors' prototype solves it (module docstring): scipy L-BFGS-B from each party's previous
    noise-free x_m, with their function value (weight `st.x_fval_weight` on the augmentation) and their gradient.
    One L-BFGS-B call per run and party: a scalar solver's path cannot be vectorised (the exception to the rule of
    no loops over agents, because the point is to follow that solver exactly). Returns x and, per run and party,
    whether the call ended abnormally (status != 0) and whether it returned its starting point."""
    from scipy.optimize import minimize

    R = state.x.shape[0]
    own = party_products(st, state.xt)                                   # (R, M, N): D_m x~_m
    if noise_on == "shared" and state.xi is not None:
        own = own + state.xi.transpose(0, 2, 1)                           # the party's cached share carries its noise
    x = state.x.copy()
    abnormal, unchanged = np.zeros((R, st.M), bool), np.zeros((R, st.M), bool)
    lam, rho, w = st.lam, st.rho, st.x_fval_weight
    for m, (lo, hi) in enumerate(zip(st.boundaries, st.boundaries[1:])):
        G, Dt_m = st.gram[m], st.Dt[lo:hi]
        resid = state.s - state.z - own[:, m]                             # sum_{k != m} shares - z
        Dty, Dtr = np.asarray(Dt_m @ state.y.T).T, np.asarray(Dt_m @ resid.T).T
        rr = np.einsum("rn,rn->r", resid, resid)
        for r in range(R):
            a, b, c = Dty[r], Dtr[r], rr[r]

            def fval(u, a=a, b=b, c=c):
                return lam * np.linalg.norm(u) + a @ u + w * (c + 2.0 * (b @ u) + u @ (G @ u))

            def grad(u, a=a, b=b):
                return 2.0 * lam * u + a + rho * (b + G @ u)

            x0 = state.x[r, lo:hi]
            res = minimize(fval, x0, jac=grad, method="L-BFGS-B")
            x[r, lo:hi] = res.x
            abnormal[r, m], unchanged[r, m] = res.status != 0, bool(np.array_equal(res.x, x0))
    return x, {"x_abnormal": abnormal, "x_unchanged": unchanged}


def centre_update(st: SharingSetup, state: SharingState) -> SharingState:
    """The centre's half (Algorithm 1, lines 7-8): (8) the entrywise z-update and (9) the dual update, from the
    pushed sum s. It reads only s, y and the labels, never a party's features (post-processing of the releases)."""
    stats = state.stats
    if st.solvers == "code":                  # the authors' entrywise Brent search (module docstring)
        from ..kernels.hu_sharing import brent_z

        z, nits = brent_z(state.s, state.y, st.Y, (st.z_rho or st.rho) / 2.0, BRENT_XTOL, BRENT_MAXITER)
        if not np.all(np.isfinite(z)):
            raise NotConvergedError("ADMM sharing z-update (8), the authors' Brent search", BRENT_MAXITER,
                                    float("nan"), BRENT_XTOL, "the bracket search found no bracket")
        stats = {**(stats or {}), "z_maxiter": (nits >= BRENT_MAXITER).mean(axis=-1)}
    else:
        z = z_update(state.s, state.y, st.Y, st.z_rho or st.rho, z0=state.z)
    y = state.y + st.rho * (state.s - z)
    return SharingState(state.x, state.xt, state.xi, state.s, z, y, state.sig, stats)


def sharing_step(st: SharingSetup, state: SharingState, sigma_feat, rngs, noise_on: str = "shared",
                 sigma_party=None, c1: float = 2.0) -> SharingState:
    """One iteration (6)-(9) of Algorithm 1 for all parties (in parallel) and all runs: `local_update`, then
    `centre_update` (see there for the arguments)."""
    return centre_update(st, local_update(st, state, sigma_feat, rngs, noise_on, sigma_party, c1))


def _broadcast_sigma(sigma, runs: int, M: int) -> np.ndarray:
    sig = np.asarray(sigma, dtype=float)
    if sig.ndim == 0:
        sig = np.full(runs, float(sig))
    if sig.ndim == 1:
        sig = np.repeat(sig[:, None], M, axis=1)
    if sig.shape != (runs, M):
        raise ValueError(f"sigma must be a scalar, one value per run ({runs},) or per run and party ({runs}, {M}); "
                         f"got shape {np.shape(sigma)}")
    if not np.all(np.isfinite(sig)) or np.any(sig < 0):
        raise ValueError(f"noise levels sigma must be finite and >= 0, got {sigma}")
    return sig


def admm_sharing(D, Y, boundaries: Sequence[int], *, rho: float, lam: float, iterations: int, sigma=0.0,
                 noise_on: str = "shared", rngs: Sequence[np.random.Generator] | None = None, runs: int | None = None,
                 D_test=None, Y_test=None, setup_: SharingSetup | None = None, z_penalty: str = "paper",
                 c1: float = 2.0, b1: float | None = None, bound_args: dict | None = None,
                 solvers: str = "exact") -> History:
    """Run Algorithm 1 for `iterations` epochs on R runs at once (vectorised over repeats and noise levels).

    `sigma`: a scalar, (R,) or (R, M) noise standard deviations (noise_on "shared" or "params"), or noise
    multipliers sqrt(2 ln(1.25/delta)) / epsilon (noise_on "authors", with `c1` = |R''|; see `authors_sigma`);
    `rngs`: one Generator per run (needed when any sigma > 0); `z_penalty`: "paper" (rho/2) or "code" (2 rho);
    `solvers`: "exact" or "code" (the authors' L-BFGS-B and Brent; module docstring).
    Index t of a trace is the state after t updates. Traces (R, iterations + 1), index 0 being the zero
    initialisation:
    `objective` (mean-form training objective (1/N) l(s) + (lam/N) ||x~||^2 at the shared, noisy values),
    `train_logloss` ((1/N) l(s), its log-loss part: what the authors' runs log as the training loss),
    `objective_clean` (the same at the noise-free x), `test_logloss` / `test_logloss_clean` (with x~ / x),
    `norm_x`, `norm_y`, `norm_z` (for the bound b_1 of Assumption 1.1), `residual` (||s - z|| / sqrt(N)).
    meta: `iter_time_s` (iterations,) wall time of each batched update (6)-(9), evaluation excluded;
    `setup_time_s`; the final `x`, `x_tilde` (R, d); `sigma_t` (R, iterations, M) the noise standard deviation each
    party used at each update (for "authors": sigma_{m,t}); for solvers="code", `solver_stats` {"x_abnormal",
    "x_unchanged": (R, iterations) share of the parties whose L-BFGS-B ended abnormally / returned its start,
    "z_maxiter": (R, iterations) share of the samples whose Brent search stopped at its iteration cap}.
    spends (noise_on "shared" with `b1`, Assumption 1.1's bound, given): one `privacy.spend.Spend` per run and party
    with sigma > 0, run-major (spends[r M + m]), with C_m = Lemma 1's bound from lam, c1, b1, M, rho and d_m;
    `bound_args` {"delta", "delta_prime"} (Theorem 1's per-iteration delta, Corollary 1's delta') name Corollary 1.
    """
    if noise_on not in NOISE_TARGETS:
        raise ValueError(f"noise_on must be one of {NOISE_TARGETS}, got {noise_on!r}")
    if int(iterations) < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    from ..kernels.logistic_math import loss_inplace

    t0 = time.perf_counter()
    st = setup_ or setup(D, Y, boundaries, rho=rho, lam=lam, z_penalty=z_penalty, pinv_half=noise_on == "authors",
                         solvers=solvers)
    setup_time = time.perf_counter() - t0
    R = runs or (len(rngs) if rngs is not None else (np.shape(sigma)[0] if np.ndim(sigma) else 1))
    sig = _broadcast_sigma(sigma, R, st.M)
    if rngs is not None and len(rngs) != R:
        raise ValueError(f"need one random generator per run: {R} runs, {len(rngs)} generators")
    if np.any(sig > 0) and rngs is None:
        raise ValueError("noise requested (sigma > 0) but no random generators given: pass rngs (rng.py)")
    sigma_feat = sig[:, st.party]
    N = st.D.shape[0]
    test = D_test is not None
    if test:
        if D_test.shape[1] != st.D.shape[1]:
            raise ValueError(f"test data has {D_test.shape[1]} features, training data {st.D.shape[1]}")
        Y_test = check_labels(Y_test, D_test.shape[0])

    names = ["objective", "objective_clean", "train_logloss", "norm_x", "norm_y", "norm_z", "residual"]
    names += ["test_logloss", "test_logloss_clean"] if test else []
    tr = {k: np.empty((R, iterations + 1)) for k in names}

    def mean_loss(z):  # loss(z).mean(-1), in place on the fresh product z (same values, same layout)
        return loss_inplace(z).mean(-1)

    def record(t, state):
        reg = st.lam / N
        tr["train_logloss"][:, t] = mean_loss(st.Y * state.s)
        tr["objective"][:, t] = tr["train_logloss"][:, t] + reg * (state.xt ** 2).sum(-1)
        tr["objective_clean"][:, t] = mean_loss(st.Y * _mv(st.D, state.x)) + reg * (state.x ** 2).sum(-1)
        tr["norm_x"][:, t] = np.linalg.norm(state.x, axis=-1)
        tr["norm_y"][:, t] = np.linalg.norm(state.y, axis=-1)
        tr["norm_z"][:, t] = np.linalg.norm(state.z, axis=-1)
        tr["residual"][:, t] = np.linalg.norm(state.s - state.z, axis=-1) / np.sqrt(N)
        if test:
            tr["test_logloss"][:, t] = mean_loss(Y_test * _mv(D_test, state.xt))
            tr["test_logloss_clean"][:, t] = mean_loss(Y_test * _mv(D_test, state.x))

    state = initial_state(st, R, noise_on)
    record(0, state)
    times = np.empty(iterations)
    sigma_t = np.zeros((R, iterations, st.M))
    noisy = bool(np.any(sig > 0))
    stats = {k: np.zeros((R, iterations)) for k in ("x_abnormal", "x_unchanged", "z_maxiter")}
    for t in range(1, iterations + 1):
        t1 = time.perf_counter()
        state = sharing_step(st, state, sigma_feat, rngs if noisy else None, noise_on, sig, c1)
        times[t - 1] = time.perf_counter() - t1
        if state.sig is not None:
            sigma_t[:, t - 1] = state.sig
        if state.stats is not None:
            for k, v in state.stats.items():
                stats[k][:, t - 1] = np.mean(v, axis=-1) if np.ndim(v) == 2 else v
        record(t, state)
    meta = {"rho": st.rho, "lam": st.lam, "M": st.M, "d_m": st.d_m.tolist(), "noise_on": noise_on,
            "z_penalty": z_penalty, "sigma": sig, "sigma_t": sigma_t, "iter_time_s": times,
            "setup_time_s": setup_time, "x": state.x, "x_tilde": state.xt, "solvers": st.solvers}
    if st.solvers == "code":
        meta["solver_stats"] = stats
    spends = []
    if noise_on == "shared" and b1 is not None and noisy:
        C = np.atleast_1d(hu2020.sensitivity_bound(st.lam, c1, b1, st.M, st.rho, st.d_m))
        spends = [hu2020.spend(sig[r, m], C[m], iterations, **(bound_args or {}))
                  for r in range(R) for m in range(st.M) if sig[r, m] > 0]
    return History(traces=tr, meta=meta, spends=spends)


def regularised_objective(D, Y, x, lam: float):
    """Mean-form objective (1/N) sum_i ln(1 + exp(-Y_i (D x)_i)) + (lam/N) ||x||^2 for x (R, d) or (d,)."""
    X = np.atleast_2d(x)
    out = loss(Y * _mv(D, X)).mean(-1) + lam / D.shape[0] * (X ** 2).sum(-1)
    return out if np.ndim(x) > 1 else float(out[0])


def centralised_optimum(D, Y, lam: float, *, tol: float = 1e-9, max_iter: int = 1000,
                        dense_newton_max_d: int = 2000, grad_tol: float = 1e-6):
    """The centralised (non-distributed, non-private) minimiser of sum_i ln(1 + e^{-Y_i a_i^T x}) + lam ||x||^2.

    scipy's exact-Hessian trust-region Newton (Newton-CG with Hessian-vector products above `dense_newton_max_d`
    features); L-BFGS-B needs minutes on a9a's ill-conditioned, rank-deficient problem. Used as the reference
    ADMM sharing must reach without noise. Raises `NotConvergedError` unless the mean-form gradient norm at the
    answer is at most `grad_tol`.
    """
    from scipy.optimize import minimize

    Y = check_labels(Y, D.shape[0])

    def fg(x):
        m = Y * np.asarray(D @ x)
        return loss(m).sum() + lam * x @ x, np.asarray(D.T @ (-Y * sigmoid_neg(m))) + 2 * lam * x

    def hess(x):
        q = sigmoid_neg(Y * np.asarray(D @ x))
        w = q * (1.0 - q)
        H = D.T @ (sp.diags(w) @ D) if sp.issparse(D) else (D * w[:, None]).T @ D
        return (H.toarray() if sp.issparse(H) else H) + 2 * lam * np.eye(D.shape[1])

    def hessp(x, p):
        q = sigmoid_neg(Y * np.asarray(D @ x))
        return np.asarray(D.T @ (q * (1.0 - q) * np.asarray(D @ p))) + 2 * lam * p

    if D.shape[1] <= dense_newton_max_d:
        res = minimize(fg, np.zeros(D.shape[1]), jac=True, hess=hess, method="trust-exact",
                       options={"maxiter": max_iter, "gtol": tol})
    else:
        res = minimize(fg, np.zeros(D.shape[1]), jac=True, hessp=hessp, method="Newton-CG",
                       options={"maxiter": max_iter, "xtol": tol})
    # scipy may stop on "precision loss" at an optimum; what counts is the gradient of the mean-form objective
    mean_grad = float(np.linalg.norm(fg(res.x)[1])) / D.shape[0]
    require_converged(f"centralised optimum ({res.message})", res.nit, mean_grad, grad_tol,
                      "mean-form gradient norm at scipy's answer")
    return res.x


def observed_b1(h: History) -> float:
    """Assumption 1.1's b_1 as docs/choices.md#hu-privacy [D] takes it: the largest ||x||, ||y||, ||z|| seen in a noise-free run."""
    return float(max(h.traces["norm_x"].max(), h.traces["norm_y"].max(), h.traces["norm_z"].max()))
