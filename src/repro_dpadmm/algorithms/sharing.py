"""(Differentially private) ADMM sharing over vertically partitioned features.

Hu, Liu, Ge, Kong, Jiang, Niu, "Learning Privately over Distributed Features: An ADMM Sharing Approach",
eqs. (6)-(9) and Algorithm 1 (SPEC §3.2). M parties hold column blocks D_m of the data D = [D_1, ..., D_M]; the
model is x = (x_1; ...; x_M). The problem, in the sum form the authors' code uses (SPEC §3.10b), is

    minimise  l(z) + lam * sum_m ||x_m||^2   s.t.  sum_m D_m x_m - z = 0,   l(z) = sum_i ln(1 + exp(-Y_i z_i)),

and iteration t -> t+1 is, for all parties in parallel (Jacobi: each uses the others' previous noisy values):

    (6) x_m^{t+1} = argmin lam ||x_m||^2 + <y^t, D_m x_m> + rho/2 ||sum_{k != m} D_k x~_k^t + D_m x_m - z^t||^2
    (7) x~_m^{t+1} = x_m^{t+1} + N(0, sigma_m^2 I)                    (noise_on="params", the paper's eq. (7))
    (8) z^{t+1} = argmin_z l(z) - <y^t, z> + rho/2 ||s^{t+1} - z||^2,   s^{t+1} = sum_m D_m x~_m^{t+1}
    (9) y^{t+1} = y^t + rho (s^{t+1} - z^{t+1})

With noise_on="shared" the party instead perturbs the value it shares, D_m x_m^{t+1} + N(0, sigma_m^2 I_N), which is
the mechanism Theorem 1 analyses (SPEC §3.2 [!]).

Every party's x-update is solved exactly: with K_m = 2 lam I + rho D_m^T D_m (factored once with Cholesky),

    x_m^{t+1} = K_m^{-1}(-D_m^T (y + rho r_m)),   r_m = sum_{k != m} D_k x~_k - z = s - z - D_m x~_m,

which we write as x_m^{t+1} = x~_m - K_m^{-1}(D_m^T v + 2 lam x~_m) with v = y + rho (s - z), the same number,
so all parties are solved at once against the block-diagonal K = diag(K_1, ..., K_M) without a loop over parties.
(The paper solves (6) with L-BFGS-B; the closed form is its exact solution.) The z-update separates over samples
and is solved by a safeguarded, vectorised Newton method for all samples (and repeats) at once.

Every array carries a leading run axis (repeats and/or noise levels): x is (R, d), z, y, s are (R, N).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve

from ..datasets.partition import vertical
from ..history import History
from ..problems.logistic import loss, sigmoid_neg
from ..rng import stacked_normal

NOISE_TARGETS = ("params", "shared")


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

    @property
    def M(self) -> int:
        return len(self.boundaries) - 1

    @property
    def d_m(self) -> np.ndarray:
        return np.diff(self.boundaries)


def setup(D, Y, boundaries: Sequence[int], *, rho: float, lam: float) -> SharingSetup:
    """Validate the inputs and factor each party's x-update matrix once (Cholesky, reused every iteration)."""
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
    for blk in blocks:                         # one-time: Gram matrix of each party's own block
        Dm = D[:, blk]
        G = Dm.T @ Dm
        K[np.ix_(blk, blk)] = rho * (G.toarray() if sp.issparse(G) else G)
    K[np.diag_indices(d)] += 2.0 * lam
    try:
        K_cho = cho_factor(K, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError("2 lam I + rho D_m^T D_m is singular for some party: use lam > 0 when a party's "
                         "columns are linearly dependent") from None
    Dt = D.T.tocsr() if sp.issparse(D) else D.T
    return SharingSetup(D, Y, b, party, float(rho), float(lam), K_cho, Dt)


def z_update(s, y, Y, rho: float, *, z0=None, max_steps: int = 100, tol: float = 1e-12):
    """Eq. (8) for every sample and run at once: argmin_zeta ln(1 + e^{-Y_i zeta}) - y_i zeta + rho/2 (s_i - zeta)^2.

    Newton's method. The curvature lies in [rho, rho + 1/4], so for rho > 1/4 each Newton step contracts the error
    by at least 1/(4 rho) from any start and plain Newton is used (a handful of steps). For smaller rho, steps are
    safeguarded by the bracket [s + (y - 1)/rho, s + (y + 1)/rho], which holds the root because the loss slope lies
    in (-1, 1); as in Numerical Recipes' rtsafe, a step leaving the bracket or not halving the step before it is
    replaced by bisection (the SPEC's 30-step cap [D] is raised to 100 for this case).
    `z0` (e.g. the previous z) is the starting point.
    """
    c = -y - rho * s                                   # g'(zeta) = -Y sigma(-Y zeta) + rho zeta + c
    lo, hi = (s + (y - 1.0) / rho, s + (y + 1.0) / rho) if rho <= 0.25 else (None, None)
    zeta = s + y / rho if z0 is None else (np.clip(z0, lo, hi) if lo is not None else np.array(z0, dtype=float))
    dx_old = None if lo is None else hi - lo
    for _ in range(max_steps):
        p = sigmoid_neg(Y * zeta)                      # sigma(-Y zeta)
        step = (rho * zeta + c - Y * p) / (p * (1.0 - p) + rho)
        new = zeta - step
        if lo is not None:                             # step has the sign of g'(zeta)
            lo = np.where(step < 0, zeta, lo)
            hi = np.where(step > 0, zeta, hi)
            bisect = (new < lo) | (new > hi) | (2.0 * np.abs(step) > dx_old)
            new = np.where(bisect, 0.5 * (lo + hi), new)
            dx_old = np.where(bisect, 0.5 * (hi - lo), np.abs(step))
        done = np.max(np.abs(new - zeta) / (1.0 + np.abs(zeta)), initial=0.0) <= tol
        zeta = new
        if done:
            break
    return zeta


@dataclass
class SharingState:
    x: np.ndarray        # (R, d) noise-free x^{t}
    xt: np.ndarray       # (R, d) x~^{t}: the parameters behind the shared values (= x when noise_on="shared")
    xi: np.ndarray | None  # (R, N, M) noise on the shared values (noise_on="shared"), else None
    s: np.ndarray        # (R, N) sum_m of the shared values
    z: np.ndarray        # (R, N)
    y: np.ndarray        # (R, N)


def initial_state(st: SharingSetup, runs: int, noise_on: str = "params") -> SharingState:
    """x, y and z start at 0 (HU §5: "we initialize the elements in x, y and z with 0")."""
    N, d = st.D.shape
    zeros = lambda *shape: np.zeros(shape)  # noqa: E731
    xi = zeros(runs, N, st.M) if noise_on == "shared" else None
    return SharingState(zeros(runs, d), zeros(runs, d), xi, zeros(runs, N), zeros(runs, N), zeros(runs, N))


def local_update(st: SharingSetup, state: SharingState, sigma_feat, rngs, noise_on: str = "params",
                 sigma_party=None) -> SharingState:
    """The parties' half of one iteration (Algorithm 1, lines 3-6): (6) and (7) for all parties and runs at once.

    Returns the new x, x~, the shared-value noise xi and the shared sum s = sum_m (D_m x~_m [+ xi_m]); z and y are
    carried over unchanged (the centre's half, `centre_update`, renews them). Party m pushes D_m x~_m (+ xi_m), the
    only quantity of an iteration that reads D_m: the release Theorem 1 analyses.
    `sigma_feat` (R, d): the noise standard deviation of each coordinate of x_m (noise_on="params");
    `sigma_party` (R, M): the noise standard deviation on each party's shared value (noise_on="shared").
    """
    rho, lam = st.rho, st.lam
    # (6), all parties at once: x_m = x~_m - K_m^{-1}(D_m^T (y + rho (s - z)) + 2 lam x~_m); a party's own cached
    # shared value is D_m x~_m (+ its shared noise), which it subtracts from the pulled sum (Alg. 1, line 4).
    v = state.y + rho * (state.s - state.z)
    g = _rmv(st.D, v, st.Dt) + 2.0 * lam * state.xt
    if noise_on == "shared":
        R, N, M = state.xi.shape
        W = _rmv(st.D, state.xi.transpose(0, 2, 1).reshape(R * M, N), st.Dt).reshape(R, M, -1)   # D^T xi_m, every m
        g = g - rho * np.take_along_axis(W, st.party[None, None, :], axis=1)[:, 0, :]     # party m keeps its own
    x = state.xt - cho_solve(st.K_cho, g.T, check_finite=False).T
    # (7) perturbation, then the shared sum s = sum_m D_m x~_m
    if noise_on == "params":
        xt = x + stacked_normal(rngs, (x.shape[1],)) * sigma_feat if rngs is not None else x
        s, xi = _mv(st.D, xt), None
    else:
        xt = x
        xi = (stacked_normal(rngs, (st.D.shape[0], st.M)) * sigma_party[:, None, :] if rngs is not None
              else np.zeros_like(state.xi))
        s = _mv(st.D, x) + xi.sum(axis=-1)
    return SharingState(x, xt, xi, s, state.z, state.y)


def centre_update(st: SharingSetup, state: SharingState) -> SharingState:
    """The centre's half (Algorithm 1, lines 7-8): (8) the entrywise z-update and (9) the dual update, from the
    pushed sum s. It reads only s, y and the labels, never a party's features (post-processing of the releases)."""
    z = z_update(state.s, state.y, st.Y, st.rho, z0=state.z)
    y = state.y + st.rho * (state.s - z)
    return SharingState(state.x, state.xt, state.xi, state.s, z, y)


def sharing_step(st: SharingSetup, state: SharingState, sigma_feat, rngs, noise_on: str = "params",
                 sigma_party=None) -> SharingState:
    """One iteration (6)-(9) of Algorithm 1 for all parties (in parallel) and all runs: `local_update`, then
    `centre_update` (see there for the arguments)."""
    return centre_update(st, local_update(st, state, sigma_feat, rngs, noise_on, sigma_party))


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
                 noise_on: str = "params", rngs: Sequence[np.random.Generator] | None = None, runs: int | None = None,
                 D_test=None, Y_test=None, setup_: SharingSetup | None = None) -> History:
    """Run Algorithm 1 for `iterations` epochs on R runs at once (vectorised over repeats and noise levels).

    `sigma`: a scalar, (R,) or (R, M) noise standard deviations; `rngs`: one Generator per run (needed when any
    sigma > 0). Traces (R, iterations + 1), index 0 being the zero initialisation:
    `objective` (mean-form training objective (1/N) l(s) + (lam/N) ||x~||^2 at the shared, noisy values),
    `objective_clean` (the same at the noise-free x), `test_logloss` / `test_logloss_clean` (with x~ / x),
    `norm_x`, `norm_y`, `norm_z` (for the bound b_1 of Assumption 1.1), `residual` (||s - z|| / sqrt(N)).
    meta: `iter_time_s` (iterations,) wall time of each batched update (6)-(9), evaluation excluded;
    `setup_time_s`; the final `x`, `x_tilde` (R, d).
    """
    if noise_on not in NOISE_TARGETS:
        raise ValueError(f"noise_on must be one of {NOISE_TARGETS}, got {noise_on!r}")
    if int(iterations) < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    t0 = time.perf_counter()
    st = setup_ or setup(D, Y, boundaries, rho=rho, lam=lam)
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

    names = ["objective", "objective_clean", "norm_x", "norm_y", "norm_z", "residual"]
    names += ["test_logloss", "test_logloss_clean"] if test else []
    tr = {k: np.empty((R, iterations + 1)) for k in names}

    def record(t, state):
        reg = st.lam / N
        tr["objective"][:, t] = loss(st.Y * state.s).mean(-1) + reg * (state.xt ** 2).sum(-1)
        tr["objective_clean"][:, t] = loss(st.Y * _mv(st.D, state.x)).mean(-1) + reg * (state.x ** 2).sum(-1)
        tr["norm_x"][:, t] = np.linalg.norm(state.x, axis=-1)
        tr["norm_y"][:, t] = np.linalg.norm(state.y, axis=-1)
        tr["norm_z"][:, t] = np.linalg.norm(state.z, axis=-1)
        tr["residual"][:, t] = np.linalg.norm(state.s - state.z, axis=-1) / np.sqrt(N)
        if test:
            tr["test_logloss"][:, t] = loss(Y_test * _mv(D_test, state.xt)).mean(-1)
            tr["test_logloss_clean"][:, t] = loss(Y_test * _mv(D_test, state.x)).mean(-1)

    state = initial_state(st, R, noise_on)
    record(0, state)
    times = np.empty(iterations)
    noisy = bool(np.any(sig > 0))
    for t in range(1, iterations + 1):
        t1 = time.perf_counter()
        state = sharing_step(st, state, sigma_feat, rngs if noisy else None, noise_on, sig)
        times[t - 1] = time.perf_counter() - t1
        record(t, state)
    meta = {"rho": st.rho, "lam": st.lam, "M": st.M, "d_m": st.d_m.tolist(), "noise_on": noise_on,
            "sigma": sig, "iter_time_s": times, "setup_time_s": setup_time, "x": state.x, "x_tilde": state.xt}
    return History(traces=tr, meta=meta)


def regularised_objective(D, Y, x, lam: float):
    """Mean-form objective (1/N) sum_i ln(1 + exp(-Y_i (D x)_i)) + (lam/N) ||x||^2 for x (R, d) or (d,)."""
    X = np.atleast_2d(x)
    out = loss(Y * _mv(D, X)).mean(-1) + lam / D.shape[0] * (X ** 2).sum(-1)
    return out if np.ndim(x) > 1 else float(out[0])


def centralised_optimum(D, Y, lam: float, *, tol: float = 1e-9, max_iter: int = 1000,
                        dense_newton_max_d: int = 2000):
    """The centralised (non-distributed, non-private) minimiser of sum_i ln(1 + e^{-Y_i a_i^T x}) + lam ||x||^2.

    scipy's exact-Hessian trust-region Newton (Newton-CG with Hessian-vector products above `dense_newton_max_d`
    features); L-BFGS-B needs minutes on a9a's ill-conditioned, rank-deficient problem. Used as the reference
    ADMM sharing must reach without noise.
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
    return res.x
