"""Consensus ADMM on a star network (one aggregator, n agents): ADMM, ADMM+PVP, DVP and DP-ADMM.

Paper: Z. Huang, R. Hu, Y. Guo, E. Chan-Tin, Y. Gong, "DP-ADMM: ADMM-Based Distributed Learning With Differential
Privacy", IEEE TIFS 15, 2019 (HUANG, docs/choices.md#huang). Problem (4): min sum_i f_i(w_i) s.t. w_i = w, with
f_i(w) = (1/m_i) sum_j l(a_ij, b_ij, w) + (lambda/n) R(w), the logistic loss (2), R = ||.||_1 or ||.||^2/2.

* ``admm``   Algorithm 1 with exact local solves (Newton for l2, accelerated proximal gradient for l1).
* ``pvp``    Algorithm 2: ADMM whose shared w_i^k gets constant Gaussian noise (primal variable perturbation, l2).
* ``dvp``    dual variable perturbation (Zhang & Zhu 2017 [17]) adapted to the star network, docs/choices.md#huang-dvp [D] (l2).
* ``dpadmm`` Algorithm 3 (DP-ADMM): the linearised primal step (10a) = (12a) = (38a)/(39a), Gaussian noise with
             sigma_{i,k} of eq. (14) (10b), aggregation (10c) and dual step (10d), eta_i^k of Theorem 3/4.

Every algorithm runs all agents and all repeats at once: iterates have shape (R, n, d) (repeat, agent, feature), the
global variable (R, d). The data of all agents and repeats is one block-diagonal sparse matrix (``StarData``), so a
product with it evaluates every agent's margins for every repeat in one call; Adult's one-hot rows have 12 non-zeros
of 104, which makes this about 6x cheaper than dense batched products. Repeats may have their own data (a split per
run, docs/choices.md#huang-split-per-run: D = R data blocks) or share one data set (D = 1).

API
---
Data: ``star_data(A, b, X_test, y_test)`` from dense arrays A (n, m, d) or (D, n, m, d); ``split_star(X, y, n, rngs)``
draws a 40,000/5,222 split and an even partition per repeat. ``StarData`` has ``margins``, ``mean_loss``,
``mean_grad``, ``hvp``, ``test_error`` (all batched over repeats and agents).

Runs (each returns a ``History``: traces 'el', 'err', 'err_global', 'aov', 'step' (how far the shared models moved
since the last iterate) of shape (R, T+1) for k = 0..T, and meta
with the final iterates 'w_tilde' (R, n, d) (the shared vectors), 'w' (R, d), 'gamma' (R, n, d), the noise levels and
'wall_time_s'; ``record=False`` skips the traces so the timing is that of training alone). A private run records what
each agent's dataset spent in ``History.spends`` (one ``privacy.spend.Spend``: the T releases of its shared vector under
replace-one neighbours, Lemma 1; ``privacy.bounds.huang2019.spend_totals`` turns it into totals):

* ``admm(data, reg=, T=)``
* ``pvp(data, T=, rngs=, sigma= | epsilon=, delta= | noise_multiplier=)``
* ``dvp(data, T=, rngs=, epsilon=)`` (pure epsilon per iteration)
* ``dpadmm(data, reg=, T=, rngs=, epsilon=, delta= | noise_multiplier=, eta=None)``: z = sigma/Delta sets both the
  noise (14) and, unless ``eta`` is given, the step sizes (29)/(34); ``add_noise=False`` runs the same schedule
  without noise.

Single steps (pure, for callers that add the noise themselves, e.g. a privacy audit):
``dpadmm_local_gradient(data, w_tilde, reg, lam_n)`` (the bracket of (12a)), ``dpadmm_primal(g, w_tilde, w, gamma,
eta, rho)`` (12a), ``dpadmm_primal_update(data, ...)`` (both), ``aggregate`` (10c), ``dual_update`` (10d); the
sensitivity (11) and sigma (14) are in ``privacy.bounds.huang2019``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..datasets import partition
from ..history import History
from ..kernels import consensus as kc
from ..kernels.logistic_math import loss_inplace, sigmoid_neg_inplace
from ..privacy.bounds import huang2019 as hb
from ..privacy.mechanisms import check_epsilon_delta, stacked_gamma_norm
from ..problems import regularizers
from ..problems.logistic import sigmoid_neg
from ..rng import stacked_normal
from ..solvers import NotConvergedError, require_converged


# --------------------------------------------------------------------------------------------------- data
@dataclass(frozen=True, eq=False)
class StarData:
    """Training data of n agents with m samples each, for D data draws (repeats), plus test data.

    Xb (D n m, D n d) CSR, block diagonal: the rows of agent i in draw r occupy the columns of w_{r,i}, so
    ``Xb @ vec(w)`` gives every sample's a^T w_{agent} for all agents and draws in one product. XbT is its
    transpose as a CSC view of the same arrays (no copy): scipy's CSC product scatters along each column and adds
    every output in the same order as a CSR copy of the transpose would, bit for bit, but runs 15-45% faster (it
    has no serial dependency on one accumulator) and halves the memory. b (D, n, m) labels in {-1, +1}; row_norms (D, n, m);
    Xt (D N_t, D d) block-diagonal CSR of the test rows and y_test (D, N_t) (optional).
    """

    Xb: sp.csr_matrix
    XbT: sp.csc_matrix
    b: np.ndarray
    row_norms: np.ndarray
    Xt: sp.csr_matrix | None = None
    y_test: np.ndarray | None = None

    @property
    def D(self) -> int:
        return self.b.shape[0]

    @property
    def n(self) -> int:
        return self.b.shape[1]

    @property
    def m(self) -> int:
        return self.b.shape[2]

    @property
    def d(self) -> int:
        return self.Xb.shape[1] // (self.D * self.n)

    @property
    def row_norm_max(self) -> float:
        return float(self.row_norms.max())

    def check_repeats(self, R: int) -> int:
        if self.D not in (1, R):
            raise ValueError(f"the data has {self.D} draws but the run has {R} repeats: give one draw per repeat or a "
                             "single draw shared by all repeats")
        return R

    # products with the block-diagonal data, for iterates w of shape (R, n, d)
    def _cols(self, w: np.ndarray) -> np.ndarray:
        R = w.shape[0]
        if self.D == R:
            return w.reshape(-1)  # 1-D: scipy's single-vector kernel is the fastest
        return w.reshape(R, -1).T  # D == 1: one column per repeat

    def _uncols(self, u: np.ndarray, R: int, last: int) -> np.ndarray:
        if self.D == R:
            return u.reshape(R, self.n, last)
        return np.ascontiguousarray(u.T).reshape(R, self.n, last)

    def product(self, w: np.ndarray) -> np.ndarray:
        """a_ij^T w_i for every repeat, agent and sample: (R, n, m)."""
        R = self.check_repeats(w.shape[0])
        return self._uncols(self.Xb @ self._cols(np.ascontiguousarray(w)), R, self.m)

    def tproduct(self, u: np.ndarray) -> np.ndarray:
        """sum_j u_ij a_ij for every repeat and agent: (R, n, d). A compiled kernel (``kernels.consensus.tproduct``,
        scipy's CSC order: equal bit for bit to ``XbT @ u``)."""
        ids = self._all(u)
        out = np.empty((ids.size, self.d))
        kc.tproduct(*self.kernel_args(), ids, np.ascontiguousarray(u).reshape(ids.size, self.m), out)
        return out.reshape(u.shape[0], self.n, self.d)

    @cached_property
    def local_cols(self) -> np.ndarray:
        """The column of each stored entry of Xb within its block (``kernels.consensus.local_columns``; uint8 for
        d <= 256)."""
        return kc.local_columns(self.Xb, self.D * self.n, self.m, self.d)

    def kernel_args(self) -> tuple:
        """The block-diagonal data as the compiled kernels take it (``kernels.consensus``): the CSR row pointers, the
        entries' columns within their blocks, the values, and the number of blocks B (problem p = r n + i reads block
        p % B)."""
        return self.Xb.indptr, self.local_cols, self.Xb.data, self.D * self.n

    def _all(self, w: np.ndarray) -> np.ndarray:
        return np.arange(self.check_repeats(w.shape[0]) * self.n)

    def margins(self, w: np.ndarray) -> np.ndarray:
        """z_ij = b_ij w_i^T a_ij: (R, n, m)."""
        ids = self._all(w)
        z = np.empty((ids.size, self.m))
        kc.margins(*self.kernel_args(), ids, self.b.reshape(-1, self.m),
                   np.ascontiguousarray(w).reshape(ids.size, self.d), z)
        return z.reshape(w.shape[0], self.n, self.m)

    def mean_loss(self, w: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
        """(1/m) sum_j ln(1 + exp(-b_ij w_i^T a_ij)), eq. (2): (R, n). `z`: margins at w if already known."""
        z = self.margins(w) if z is None else np.array(z, dtype=float, order="C")  # a copy: overwritten below
        return loss_inplace(z).mean(axis=-1)  # = problems.logistic.loss(z), bit for bit

    def mean_grad(self, w: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
        """(1/m) sum_j l'(a_ij, b_ij, w_i) = -(1/m) sum_j b_ij a_ij / (1 + exp(b_ij w_i^T a_ij)): (R, n, d)."""
        z = self.margins(w) if z is None else z
        ids = self._all(z)
        out = np.empty((ids.size, self.d))  # the transposed product of -b sigma(-z), the weights formed on the fly
        sg = sigmoid_neg(z).reshape(ids.size, self.m)
        kc.neg_b_tproduct(*self.kernel_args(), ids, self.b.reshape(-1, self.m), sg, out)
        return out.reshape(z.shape[0], self.n, self.d) / self.m

    def margins_lanes(self, w: np.ndarray) -> np.ndarray:
        """``margins`` of L lanes (settings of one run on this data) at once: w (L, R, n, d) -> (L, R, n, m), each
        block row read once for every lane; lane l equals ``margins(w[l])`` bit for bit."""
        L, R = w.shape[:2]
        ids = self._all(w[0])
        z = np.empty((L, ids.size, self.m))
        kc.margins_lanes(*self.kernel_args(), ids, self.b.reshape(-1, self.m),
                         np.ascontiguousarray(w).reshape(L, ids.size, self.d), z)
        return z.reshape(L, R, self.n, self.m)

    def mean_grad_lanes(self, w: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
        """``mean_grad`` of L lanes at once: w (L, R, n, d) (z: their margins, (L, R, n, m)) -> (L, R, n, d); lane l
        equals ``mean_grad(w[l])`` bit for bit."""
        # sigma(-z): in place on margins made here (the same numbers as sigmoid_neg's copy)
        sg = sigmoid_neg_inplace(self.margins_lanes(w)) if z is None else sigmoid_neg(z)
        L, R = sg.shape[:2]
        ids = self._all(sg[0])
        out = np.empty((L, ids.size, self.d))
        sg = sg.reshape(L, ids.size, self.m)
        kc.neg_b_tproduct_lanes(*self.kernel_args(), ids, self.b.reshape(-1, self.m), sg, out)
        out /= self.m
        return out.reshape(L, R, self.n, self.d)

    def hvp(self, c: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(1/m) sum_j c_ij a_ij a_ij^T v_i (the data part of a Hessian-vector product; c = s (1 - s)): (R, n, d)."""
        ids = self._all(v)
        out = np.empty((ids.size, self.d))
        kc.hvp(*self.kernel_args(), ids, np.ascontiguousarray(np.broadcast_to(c, v.shape[:2] + (self.m,))).reshape(
            ids.size, self.m), np.ascontiguousarray(v).reshape(ids.size, self.d), out)
        return out.reshape(v.shape) / self.m

    def test_scores(self, w: np.ndarray) -> np.ndarray:
        """w^T a for every test sample and model: w (R, n, d) -> (R, N_t, n). One sparse product (3x faster than a
        dense batched GEMM on Adult's one-hot rows)."""
        if self.Xt is None:
            raise ValueError("this StarData has no test set")
        R, n, d = w.shape
        self.check_repeats(R)
        Nt = self.y_test.shape[1]
        if self.D == R:
            return (self.Xt @ self._test_cols(w)).reshape(R, Nt, n)
        s = self.Xt @ w.reshape(R * n, d).T  # D == 1: (N_t, R n)
        return s.reshape(Nt, R, n).transpose(1, 0, 2)

    def _test_cols(self, w: np.ndarray) -> np.ndarray:
        R, n, d = w.shape
        return np.ascontiguousarray(w.transpose(0, 2, 1)).reshape(R * d, n)

    def test_error(self, w: np.ndarray) -> np.ndarray:
        """Test error of sign(w^T a) (tie -> -1, docs/choices.md#numerical-conventions): w (R, n, d) -> (R, n); w (R, d) -> (R,)."""
        single = w.ndim == 2
        w3 = w[:, None, :] if single else w
        if self.Xt is not None and self.D == w3.shape[0]:
            # compiled: the scores of test_scores, compared as they are made (no (R, N_t, n) array)
            Nt = self.y_test.shape[1]
            counts = np.empty(w3.shape[:2], dtype=np.int64)
            kc.misclassified(self.Xt.indptr, self.Xt.indices, self.Xt.data, self._test_cols(w3),
                             self.y_test.reshape(-1), Nt, counts)
            err = counts / Nt
        else:
            s = self.test_scores(w3)
            err = np.count_nonzero((s > 0) != (self.y_test > 0)[..., None], axis=-2) / s.shape[-2]
        return err[:, 0] if single else err

    def training_rows(self):
        """(X, y) of each draw's n m training samples: a CSR (D n m, d) and y (D, n m)."""
        d = self.d
        Xs = sp.csr_matrix((self.Xb.data, self.Xb.indices % d, self.Xb.indptr), shape=(self.Xb.shape[0], d))
        return Xs, self.b.reshape(self.D, -1)


def _block_diag(Xs: sp.csr_matrix, blocks: int, m: int) -> sp.csr_matrix:
    """Shift the columns of consecutive groups of m rows of Xs (blocks * m, d) to their own block of d columns."""
    d = Xs.shape[1]
    Xs = Xs.tocsr(copy=True)
    Xs.sort_indices()
    blk = np.repeat(np.arange(blocks), m)
    cols = Xs.indices + np.repeat(blk * d, np.diff(Xs.indptr))
    return sp.csr_matrix((Xs.data, cols, Xs.indptr), shape=(blocks * m, blocks * d))


def _build(Xs, b, X_test, y_test) -> StarData:
    D, n, m = b.shape
    if not np.all(np.isin(b, (-1.0, 1.0))):
        raise ValueError("labels must be -1 or +1 (HUANG §VI-A)")
    Xb = _block_diag(Xs, D * n, m)
    norms = np.sqrt(np.asarray(Xs.multiply(Xs).sum(axis=1))).reshape(D, n, m)
    Xt = None
    if X_test is not None:
        X_test = X_test if sp.issparse(X_test) else np.asarray(X_test, dtype=float)
        y_test = np.asarray(y_test, dtype=float)
        if y_test.ndim == 1:
            y_test = y_test[None]
        Nt = y_test.shape[1]
        Xt_rows = sp.csr_matrix(X_test.reshape(-1, X_test.shape[-1]) if not sp.issparse(X_test) else X_test)
        if y_test.shape[0] != D or Xt_rows.shape != (D * Nt, Xs.shape[1]):
            raise ValueError(f"test data must be (D, N_t, d) = ({D}, N_t, {Xs.shape[1]}) with labels (D, N_t); got "
                             f"{np.shape(X_test)} and {y_test.shape}")
        Xt = _block_diag(Xt_rows, D, Nt)
    return StarData(Xb, Xb.T, b, norms, Xt, y_test)


def star_data(A, b, X_test=None, y_test=None) -> StarData:
    """StarData from dense arrays: A (n, m, d) or (D, n, m, d), b (n, m) or (D, n, m), test data (N_t, d) or
    (D, N_t, d)."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if A.ndim == 3:
        A, b = A[None], b[None]
        if X_test is not None and np.ndim(X_test) == 2:
            X_test, y_test = np.asarray(X_test)[None], np.asarray(y_test)[None]
    if A.ndim != 4 or b.shape != A.shape[:3]:
        raise ValueError(f"A must be (n, m, d) or (D, n, m, d) with b of its first axes; got {A.shape}, {b.shape}")
    D, n, m, d = A.shape
    return _build(sp.csr_matrix(A.reshape(-1, d)), b, X_test, y_test)


def split_star(X, y, n_agents: int, rngs: Sequence[np.random.Generator], n_train: int = 40_000,
               n_test: int | None = None) -> StarData:
    """One data draw per generator (docs/choices.md#huang-split-per-run [D]: redrawn every run): a random n_train / rest train-test split and
    a random even partition of the training rows over n_agents (m_i = n_train / n, HUANG §VI-A). `n_test` keeps only
    the first n_test test rows (smoke runs). The same generator state gives the same train/test split for every
    n_agents (the partition is drawn after the split).

    Raises a clear error if n_agents does not divide n_train. X may be dense or sparse (N, d).
    """
    Xs = sp.csr_matrix(X)
    y = np.asarray(y, dtype=float)
    if Xs.shape[0] != y.shape[0]:
        raise ValueError(f"X has {Xs.shape[0]} rows but y has {y.shape[0]}")
    if n_agents < 1 or n_train % n_agents:
        raise ValueError(f"an even split needs the number of agents to divide the training set: {n_train} samples "
                         f"over {n_agents} agents; choose n dividing {n_train} (e.g. 10, 20, 50, 100, 200)")
    if not 0 < n_train < Xs.shape[0]:
        raise ValueError(f"n_train must lie in (0, {Xs.shape[0]}) to leave a test set, got {n_train}")
    rows, tests = [], []
    for g in rngs:
        tr, te = partition.train_test(Xs.shape[0], n_train, g)
        rows.append(tr[partition.even(n_train, n_agents, g)])
        tests.append(te if n_test is None else te[:n_test])
    return star_from_rows(Xs, y, np.stack(rows), np.stack(tests))


def star_from_rows(X, y, train_rows, test_rows=None) -> StarData:
    """StarData from given row indices of (X, y): train_rows (D, n, m) puts rows train_rows[r, i] at agent i in draw
    r; test_rows (D, N_t) are each draw's test rows (or None). X dense or sparse (N, d)."""
    Xs = sp.csr_matrix(X)
    y = np.asarray(y, dtype=float)
    train_rows = np.asarray(train_rows)
    if train_rows.ndim != 3:
        raise ValueError(f"train_rows must be (draws, agents, samples per agent), got shape {train_rows.shape}")
    rows = train_rows.reshape(-1)
    b = y[rows].reshape(train_rows.shape)
    if test_rows is None:
        return _build(Xs[rows], b, None, None)
    te = np.asarray(test_rows)
    return _build(Xs[rows], b, Xs[te.reshape(-1)], y[te])


# --------------------------------------------------------------------------------------------------- shared steps
def aggregate(w_hat: np.ndarray, gamma_prev: np.ndarray, rho: float) -> np.ndarray:
    """(10c) / Alg. 1 line 6: w^k = (1/n) sum_i w-hat_i^k - (1/n) sum_i gamma_i^{k-1} / rho: (R, d)."""
    return w_hat.mean(axis=-2) - gamma_prev.mean(axis=-2) / rho


def dual_update(gamma_prev: np.ndarray, w_hat: np.ndarray, w: np.ndarray, rho: float) -> np.ndarray:
    """(10d) / Alg. 1 line 8: gamma_i^k = gamma_i^{k-1} - rho (w-hat_i^k - w^k): (R, n, d)."""
    return gamma_prev - rho * (w_hat - w[..., None, :])


def dpadmm_local_gradient(data: StarData, w_tilde: np.ndarray, reg: str, lam_n: float,
                          z: np.ndarray | None = None) -> np.ndarray:
    """(1/m_i) sum_j l'(a_ij, b_ij, w-tilde_i) + (lambda/n) R'(w-tilde_i): the gradient part of (12a), (38a), (39a)."""
    return data.mean_grad(w_tilde, z) + lam_n * regularizers.subgradient(reg, w_tilde)


def dpadmm_primal(g: np.ndarray, w_tilde_prev: np.ndarray, w_prev: np.ndarray, gamma_prev: np.ndarray, eta,
                  rho: float) -> np.ndarray:
    """(12a) = (38a)/(39a), the minimiser of the approximate Lagrangian (8):
    w_i^k = (-g_i + gamma_i^{k-1} + rho w^{k-1} + w-tilde_i^{k-1}/eta_i^k) / (rho + 1/eta_i^k).

    g (R, n, d) from ``dpadmm_local_gradient``; w_prev (R, d); eta scalar or (n,) (one per agent).
    """
    inv = 1.0 / np.asarray(eta, dtype=float)
    inv = inv[:, None] if inv.ndim == 1 else inv
    return (-g + gamma_prev + rho * w_prev[..., None, :] + w_tilde_prev * inv) / (rho + inv)


def dpadmm_primal_update(data: StarData, w_tilde_prev, w_prev, gamma_prev, eta, *, rho: float = 0.1,
                         lam_n: float = 1e-6, reg: str = "l2") -> np.ndarray:
    """The noise-free DP-ADMM primal update (10a) for every agent and repeat: (R, n, d). Add N(0, sigma_{i,k}^2)
    (``privacy.bounds.huang2019.sigma``) to get w-tilde_i^k (10b)."""
    return dpadmm_primal(dpadmm_local_gradient(data, w_tilde_prev, reg, lam_n), w_tilde_prev, w_prev, gamma_prev,
                         eta, rho)


# --------------------------------------------------------------------------------------------------- exact local solves
def _norms(v):
    return np.sqrt((v * v).sum(axis=-1))


def solve_local_l2(data: StarData, w_start, lin, center, *, quad: float, rho: float, tol: float = 1e-8,
                   max_steps: int = 50, max_cg: int = 50, cache: dict | None = None):
    """argmin_w (1/m) sum_j l(b_j a_j^T w) + (quad/2) ||w||^2 - <lin_i, w> + (rho/2) ||w - center||^2 for every agent
    and repeat: the exact local step of Alg. 1 line 4 for l2 (quad = lambda/n, lin = gamma_i^{k-1}, center = w^{k-1}).

    Newton's method (docs/choices.md#huang-exact-local-solves [D]) from the warm start w_start (R, n, d), until every gradient norm is < tol
    (at most max_steps; otherwise NotConvergedError). The Hessian (1/m) A_i^T diag(s(1-s)) A_i + (quad + rho) I has condition number
    <= (quad + rho + 1/4)/(quad + rho) (~3.5 at rho = 0.1, since ||a|| <= 1), so each Newton system is solved
    matrix-free by conjugate gradients to a relative residual of min(0.1, ||g||^0.5) (exact Hessian-vector products,
    one compiled sweep over the agent's rows each, ``kernels.consensus.hvp``). This replaces a dense Hessian plus a
    batched np.linalg.solve: forming 1,000 Hessians of 104 x 104 takes as long as ~40 sparse products per Newton step,
    a CG solve ~6-10. Safeguard: an agent whose gradient norm would grow halves its step (the Newton direction
    decreases ||g||^2). Active set: a problem whose gradient norm is below tol takes no further step (a Newton step
    reads the data blocks of the active problems alone), and the CG of a Newton step stops when the active problems
    meet their residual. `cache` may hold the margins 'z' at w_start and receives those at the solution (and, for a
    next solve warm-started at this solution, a copy 'w' of it with the data part of the gradient there 'gd' and
    sigma(-z) 'sg'). Returns (w, newton steps, max final gradient norm).
    """
    center = center[..., None, :] if center.ndim == w_start.ndim - 1 else center
    kappa = quad + rho
    R, n, d = w_start.shape
    m, P = data.m, data.check_repeats(R) * n
    K = data.kernel_args()
    b = data.b.reshape(-1, m)
    # the problems are rows of 2-D arrays (P = R n): w (P, d), margins (P, m); a step works on the rows of the active
    # problems `ids` alone, gathered into compact arrays (row q = problem ids[q]); every operation is per problem, so
    # a problem's numbers do not depend on which others are active
    lin_c = np.ascontiguousarray(np.broadcast_to(lin + rho * center, w_start.shape)).reshape(P, d)

    def margins(ids, w):
        z = np.empty((ids.size, m))
        kc.margins(*K, ids, b, w, z)
        return z

    def data_grad(ids, z):
        sg = sigmoid_neg(z)
        t = np.empty((ids.size, d))
        kc.neg_b_tproduct(*K, ids, b, sg, t)  # the transposed product of -b sigma(-z)
        return t / m, sg

    def grad(ids, w, z, lin_c):
        gd, sg = data_grad(ids, z)
        return gd + kappa * w - lin_c, sg, gd

    def newton_step(ids, w, z, g, sg, gn, lin_c):
        c = sg * (1.0 - sg)
        p = _cg(data, ids, c, m, kappa, g, np.minimum(0.1, np.sqrt(gn)), max_cg)
        t = np.ones(w.shape[:-1] + (1,))
        for _ in range(30):
            w_new = w - t * p
            z_new = margins(ids, w_new)
            g_new, sg_new, gd_new = grad(ids, w_new, z_new, lin_c)
            gn_new = _norms(g_new)
            bad = gn_new > gn
            if not bad.any():
                break
            t = np.where(bad[..., None], 0.5 * t, t)
        return w_new, z_new, g_new, sg_new, gn_new, gd_new

    w = w_start.reshape(P, d).copy()
    every = np.arange(P)
    cache = {} if cache is None else cache
    z = cache["z"].reshape(P, m).copy() if cache.get("z") is not None else margins(every, w)
    if cache.get("w") is not None and np.array_equal(cache["w"], w_start):  # warm start at the previous solve's
        # solution: the data part of the gradient there is known (computed from the same margins, the same numbers)
        gd, sg = cache["gd"].copy(), cache["sg"].copy()
    else:
        gd, sg = data_grad(every, z)
    g = gd + kappa * w - lin_c
    gn = _norms(g)
    steps = 0
    while gn.max() >= tol and steps < max_steps:
        steps += 1
        ids = np.flatnonzero(gn >= tol)  # active set: a problem that met the tolerance takes no further step
        w[ids], z[ids], g[ids], sg[ids], gn[ids], gd[ids] = newton_step(ids, w[ids], z[ids], g[ids], sg[ids],
                                                                        gn[ids], lin_c[ids])
        if not np.all(np.isfinite(w)):
            raise FloatingPointError("the local Newton solve diverged (non-finite iterate)")
    gn = gn.reshape(R, n)
    require_converged("HUANG l2 exact local solve (Newton)", steps, gn, tol)
    w = w.reshape(R, n, d)
    cache.update(z=z.reshape(R, n, m), w=w.copy(), gd=gd, sg=sg)
    return w, steps, float(gn.max())


def _cg(data, ids, c, m, kappa, g, forcing, max_iter):
    """Solve H p = g by conjugate gradients for the problems ids (compact rows; H = (1/m) A^T diag(c) A + kappa I),
    stopping at ||r|| <= forcing ||g|| for every one of them (at most max_iter iterations). Each iteration is one
    compiled sweep (``kernels.consensus.cg_step``: the fused Hessian-vector product and the vector updates, in the
    order numpy made them)."""
    p = np.zeros_like(g)
    r = g.copy()
    q = r.copy()
    rr = (r * r).sum(-1)
    target = (forcing ** 2) * rr
    rr_new = np.empty_like(rr)
    K = data.kernel_args()
    args = (ids, c, float(m), kappa)
    for it in range(max_iter):
        if g.shape[1] <= kc.PAIRWISE_BLOCK:
            done = kc.cg_step(*K, *args, it == 0, p, r, q, rr, rr_new, target)
        else:  # the compiled step sums at most PAIRWISE_BLOCK terms in numpy's order: numpy for wider problems
            done = kc.cg_step_reference(data.Xb, K[3], *args, it == 0, p, r, q, rr, rr_new, target)
        if done:
            break
    return p


def solve_local_l1(data: StarData, w_start, lin, center, *, lam_n: float, rho: float, tol: float = 1e-8,
                   max_iter: int = 500):
    """argmin_w (1/m) sum_j l(b_j a_j^T w) - <lin_i, w> + (rho/2) ||w - center||^2 + (lambda/n) ||w||_1 for every
    agent and repeat: the exact local step of Alg. 1 for l1 (docs/choices.md#huang-exact-local-solves [D]).

    Accelerated proximal gradient on the smooth part (step 1/L, L = max||a||^2/4 + rho; soft thresholding at
    lambda/(n L)), with the constant momentum (sqrt(L) - sqrt(rho))/(sqrt(L) + sqrt(rho)) of strongly convex FISTA
    (the smooth part is rho-strongly convex). Stops when every agent's step is < tol; NotConvergedError if that
    takes more than max_iter iterations.
    Returns (w, iterations, max final step norm).
    """
    center = center[..., None, :] if center.ndim == w_start.ndim - 1 else center
    lin_c = lin + rho * center
    L = 0.25 * data.row_norm_max ** 2 + rho
    beta = (np.sqrt(L) - np.sqrt(rho)) / (np.sqrt(L) + np.sqrt(rho))
    w = w_start.copy()
    w_old = w
    change = np.inf
    for it in range(1, max_iter + 1):
        yv = w + beta * (w - w_old)
        g = data.mean_grad(yv) + rho * yv - lin_c
        w_old, w = w, regularizers.prox_l1(yv - g / L, lam_n / L)
        change = float(_norms(w - w_old).max())
        if not np.isfinite(change):
            raise FloatingPointError("the local proximal-gradient solve diverged")
        if change < tol:
            return w, it, change
    raise NotConvergedError("HUANG l1 exact local solve (accelerated proximal gradient)", max_iter, change, tol,
                            hint="largest step norm of any agent; raise max_inner")


# --------------------------------------------------------------------------------------------------- traces
def _check_common(data: StarData, T: int, rho: float, lam_n: float, R: int):
    if not isinstance(data, StarData):
        raise TypeError("data must be a StarData (see star_data / split_star)")
    if int(T) != T or T < 1:
        raise ValueError(f"the number of iterations T must be a positive integer, got {T}")
    if not rho > 0:
        raise ValueError(f"the ADMM penalty rho must be > 0, got {rho}")
    if not lam_n >= 0:
        raise ValueError(f"lambda/n must be >= 0, got {lam_n}")
    data.check_repeats(R)


def _repeats(data: StarData, rngs, repeats) -> int:
    if rngs is not None:
        if len(rngs) < 1:
            raise ValueError("give at least one generator (one per repeat)")
        return len(rngs)
    return int(repeats) if repeats is not None else data.D


def _init(data: StarData, R: int, init: dict | None):
    n, d = data.n, data.d
    init = init or {}
    w_hat = np.broadcast_to(np.asarray(init.get("w_tilde", 0.0), dtype=float), (R, n, d)).copy()
    w = np.broadcast_to(np.asarray(init.get("w", 0.0), dtype=float), (R, d)).copy()
    gamma = np.broadcast_to(np.asarray(init.get("gamma", 0.0), dtype=float), (R, n, d)).copy()
    return w_hat, w, gamma


class _Recorder:
    """Per-iteration metrics of docs/choices.md#huang-metrics: EL (training, each agent's own shared model, no regulariser), test error
    (mean over agents of the shared models; and of the global w^k), AOV = sum_i f_i(w-hat_i^k) + rho ||w-hat_i^k -
    w^k|| with w-bar^k := w^k [D].

    The agents' mean test error costs a (N_t x d) @ (d x n) product per repeat (13x the work of an iteration of
    DP-ADMM at n = 100), so it is evaluated at k = 0, every `err_every` iterations and at k = T; other iterations
    hold NaN. Everything else is recorded at every k.
    """

    def __init__(self, data: StarData, reg: str, lam_n: float, rho: float, on: bool, T: int, err_every: int = 1,
                 shared: bool = False):
        if int(err_every) != err_every or err_every < 1:
            raise ValueError(f"err_every must be a positive integer, got {err_every}")
        self.data, self.reg, self.lam_n, self.rho, self.on = data, reg, lam_n, rho, on
        self.shared = shared  # every agent holds w (DPSGD): the agents' mean test error is that of w
        self.T, self.err_every = T, int(err_every)
        self.rows = {"el": [], "err": [], "err_global": [], "aov": [], "step": []}
        self.seconds = 0.0
        self.prev = None  # the shared models of the previous iterate (for `step`)

    def __call__(self, w_hat, w, k: int, z=None):
        """Record at (w_hat, w) = iterate k; returns the margins at w_hat (for reuse by the next step) or None."""
        if not self.on:
            return None
        t0 = time.perf_counter()
        z = self.data.margins(w_hat) if z is None else z
        ml = self.data.mean_loss(w_hat, z)
        f = ml + self.lam_n * regularizers.value(self.reg, w_hat)
        self.rows["el"].append(ml.mean(-1))
        # how far the shared models moved since the last iterate, mean over agents (0 at k = 0): HUANG §III-A's
        # "the trained model would keep changing dramatically" under PVP's constant noise
        self.rows["step"].append(np.zeros(w_hat.shape[0]) if self.prev is None else
                                 _norms(w_hat - self.prev).mean(-1))
        self.prev = np.array(w_hat, copy=True)
        self.rows["aov"].append((f + self.rho * _norms(w_hat - w[..., None, :])).sum(-1))
        if self.data.Xt is not None:
            err_w = self.data.test_error(w)
            if self.shared:
                self.rows["err"].append(err_w)
            elif k % self.err_every == 0 or k == self.T:
                self.rows["err"].append(self.data.test_error(w_hat).mean(-1))
            else:
                self.rows["err"].append(np.full(w.shape[0], np.nan))
            self.rows["err_global"].append(err_w)
        self.seconds += time.perf_counter() - t0
        return z

    def traces(self):
        return {k: np.stack(v, axis=1) for k, v in self.rows.items() if v}


def _history(rec: _Recorder, t_start: float, meta: dict, spends: Sequence = ()) -> History:
    wall = time.perf_counter() - t_start
    # with record=False the loop is training alone; with traces on, DP-ADMM reuses the recorder's margins, so only
    # the total is meaningful
    meta = {**meta, "wall_time_s": wall, "train_time_s": None if rec.on else wall, "metric_time_s": rec.seconds}
    return History(rec.traces(), meta, list(spends))


# --------------------------------------------------------------------------------------------------- algorithms
def _exact_step(data, reg, w_start, gamma, w, rho, lam_n, tol, max_inner, lin_extra=None, quad_extra=0.0,
                cache=None):
    lin = gamma if lin_extra is None else gamma + lin_extra
    if reg == "l2":
        return solve_local_l2(data, w_start, lin, w, quad=lam_n + quad_extra, rho=rho, tol=tol,
                              max_steps=max_inner or 50, cache=cache)
    if quad_extra or lin_extra is not None:
        raise ValueError("perturbed local solves are defined for l2 only")
    return solve_local_l1(data, w_start, lin, w, lam_n=lam_n, rho=rho, tol=tol, max_iter=max_inner or 500)


def _admm_loop(data, *, reg, T, rho, lam_n, R, record, init, tol, max_inner, share, perturb=None, err_every=1):
    """Alg. 1 / Alg. 2 / DVP: exact local solve (line 4), optional output noise `share`, aggregation, dual step."""
    regularizers.check(reg)
    _check_common(data, T, rho, lam_n, R)
    w_local, w, gamma = _init(data, R, init)
    rec = _Recorder(data, reg, lam_n, rho, record, T, err_every)
    t0 = time.perf_counter()
    rec(w_local, w, 0)
    inner_max, inner_total = 0, 0
    res_max = 0.0
    cache = {}  # margins at the warm start, carried from one local solve to the next
    for k in range(1, T + 1):
        lin_extra, quad_extra = perturb(k) if perturb else (None, 0.0)
        w_local, inner, res = _exact_step(data, reg, w_local, gamma, w, rho, lam_n, tol, max_inner, lin_extra,
                                          quad_extra, cache)
        inner_max, inner_total, res_max = max(inner_max, inner), inner_total + inner, max(res_max, res)
        w_hat = share(k, w_local) if share else w_local
        w_new = aggregate(w_hat, gamma, rho)
        gamma = dual_update(gamma, w_hat, w_new, rho)
        w = w_new
        rec(w_hat, w, k, cache.get("z") if share is None else None)
    meta = {"w_tilde": w_hat if T else w_local, "w_local": w_local, "w": w, "gamma": gamma, "T": T,
            "inner_steps_max": inner_max, "inner_steps_mean": inner_total / T, "inner_residual_max": res_max}
    return rec, t0, meta


def admm(data: StarData, *, reg: str, T: int, rho: float = 0.1, lam_n: float = 1e-6, repeats: int | None = None,
         tol: float = 1e-8, max_inner: int | None = None, record: bool = True, init: dict | None = None,
         err_every: int = 1) -> History:
    """Algorithm 1 (non-private ADMM, baseline (2)) with exact local solves: Newton for l2, accelerated proximal
    gradient for l1 (docs/choices.md#huang-exact-local-solves [D], tol 1e-8). AOV uses w_i^k in place of w-tilde_i^k."""
    R = _repeats(data, None, repeats)
    rec, t0, meta = _admm_loop(data, reg=reg, T=T, rho=rho, lam_n=lam_n, R=R, record=record, init=init, tol=tol,
                               max_inner=max_inner, share=None, err_every=err_every)
    return _history(rec, t0, meta)


def pvp(data: StarData, *, T: int, rngs: Sequence[np.random.Generator], sigma: float | None = None,
        epsilon: float | None = None, delta: float | None = None, noise_multiplier: float | None = None,
        rho: float = 0.1, lam_n: float = 1e-6, c1: float = hb.C1, tol: float = 1e-8, max_inner: int | None = None,
        record: bool = True, init: dict | None = None, err_every: int = 1) -> History:
    """Algorithm 2 (ADMM with primal variable perturbation, baseline (3), l2 only): w-tilde_i^k = w_i^k +
    N(0, sigma_i^2 I) with constant sigma_i (line 5), and w-tilde replaces w_i in lines 7 and 9.

    Give `sigma` directly, or (epsilon, delta), or the noise multiplier z: sigma_i = z 2 c_1 / ((lambda/n + rho) m_i)
    (§III-A). The next local solve is warm-started at the agent's own noise-free w_i^k. A noisy run records T
    Gaussian releases of multiplier sigma_i / (2 c_1 / ((lambda/n + rho) m_i)) (``hb.pvp_sensitivity``).
    """
    given = [sigma is not None, epsilon is not None or delta is not None, noise_multiplier is not None]
    if sum(given) != 1:
        raise ValueError("give exactly one of sigma, (epsilon, delta) or noise_multiplier")
    z = None
    if sigma is None:
        if epsilon is not None:
            check_epsilon_delta(epsilon, delta, max_epsilon=1.0)
        sigma = hb.pvp_sigma(data.m, rho, lam_n, epsilon, delta, z=noise_multiplier, c1=c1)
        z = hb.noise_multiplier(epsilon, delta) if noise_multiplier is None else noise_multiplier
    if not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    _check_private_data(data, c1)
    R = _repeats(data, rngs, None)

    def share(k, w_local):
        return w_local + stacked_normal(rngs, (data.n, data.d), sigma)

    rec, t0, meta = _admm_loop(data, reg="l2", T=T, rho=rho, lam_n=lam_n, R=R, record=record, init=init, tol=tol,
                               max_inner=max_inner, share=share, err_every=err_every)
    meta.update(sigma=float(sigma), noise_multiplier=z, epsilon=epsilon, delta=delta)
    spends = []
    if sigma > 0:  # z as calibrated (sigma = z sensitivity), or sigma given directly over the sensitivity
        z_used = z if z is not None else sigma / float(hb.pvp_sensitivity(data.m, rho, lam_n, c1))
        spends.append(hb.gaussian_spend(z_used, T, delta))
    return _history(rec, t0, meta, spends)


def dvp(data: StarData, *, T: int, rngs: Sequence[np.random.Generator], epsilon: float, rho: float = 0.1,
        lam_n: float = 1e-6, c: float = 0.25, tol: float = 1e-8, max_inner: int | None = None, record: bool = True,
        init: dict | None = None, err_every: int = 1) -> History:
    """ADMM with dual variable perturbation (Zhang & Zhu 2017 [17], baseline (4)) on the star network, docs/choices.md#huang-dvp [D]:
    pure epsilon-DP per iteration by objective perturbation. Each iteration, agent i draws b with density
    ~ exp(-(eps'/2) ||b||) and solves w_i^k = argmin f_i(w) + (Delta/2)||w||^2 + (1/m) b^T w - <gamma_i^{k-1},
    w - w^{k-1}> + (rho/2)||w - w^{k-1}||^2 exactly (i.e. the dual gamma_i is perturbed by -b/m inside the solve);
    w_i^k is shared as is, and aggregation / dual step use the unperturbed gamma (l2 only). Records T pure releases
    of the epsilon its noise and regulariser give (``hb.dvp_epsilon``; equal to `epsilon` up to rounding)."""
    check_epsilon_delta(epsilon)
    _check_private_data(data, 1.0)  # Chaudhuri et al.'s calibration assumes ||a|| <= 1
    cal = hb.dvp_calibration(epsilon, data.m, lam_n, rho, c)
    R = _repeats(data, rngs, None)

    def perturb(k):
        bnoise = stacked_gamma_norm(rngs, data.d, cal["alpha"], size=(data.n,))
        return -bnoise / data.m, cal["Delta"]

    rec, t0, meta = _admm_loop(data, reg="l2", T=T, rho=rho, lam_n=lam_n, R=R, record=record, init=init, tol=tol,
                               max_inner=max_inner, share=None, perturb=perturb, err_every=err_every)
    meta.update(epsilon=epsilon, **cal)
    eps_used = hb.dvp_epsilon(cal["alpha"], cal["Delta"], data.m, lam_n, rho, c)
    return _history(rec, t0, meta, [hb.dvp_spend(eps_used, T)])


def dpadmm_lanes(data: StarData, *, reg: str, T: int, rngs: Sequence[np.random.Generator] | None,
                 noise_multiplier: float, etas, rho: float = 0.1, lam_n: float = 1e-6, c1: float = hb.C1,
                 add_noise: bool = True) -> np.ndarray:
    """Algorithm 3 (``dpadmm``) for L step-size schedules at once, as lanes of one run: etas (L, T) or (L, T, n), one
    eta_i^k schedule per lane (e.g. multiples of Theorem 4's (34)); every lane has the noise multiplier z, so lane l's
    sigma_{i,k} of eq. (14) follows its own eta (Lemma 1's sensitivity (11)). The lanes share the data (one sweep of
    each block row per iteration for all lanes, ``StarData.margins_lanes`` / ``mean_grad_lanes``) and the noise
    draws: iteration k draws each repeat's standard normals (n, d) once from its Generator, and lane l scales them by
    its sigma_{i,k}, exactly as a separate ``dpadmm`` run per lane with fresh Generators of the same seeds draws
    them. So lane l equals ``dpadmm(..., eta=etas[l])``'s final w-tilde_i^T bit for bit
    (tests/algorithms/test_consensus.py). Initialisation w^0 = w-tilde^0 = gamma^0 = 0. Returns w-tilde^T
    (L, R, n, d)."""
    regularizers.check(reg)
    z = float(noise_multiplier)
    if not np.isfinite(z) or z < 0:
        raise ValueError(f"the noise multiplier must be >= 0, got {noise_multiplier}")
    add_noise, R = _checked_run(data, z, add_noise, rngs, c1, T, rho, lam_n)
    n, d = data.n, data.d
    etas = np.asarray(etas, dtype=float)
    if etas.ndim < 2 or etas.shape[1:] not in ((T,), (T, n)) or np.any(~np.isfinite(etas)) or np.any(etas <= 0):
        raise ValueError(f"etas must be positive with shape (L, T) = (L, {T}) or (L, T, n) = (L, {T}, {n}); got "
                         f"{etas.shape}")
    L = etas.shape[0]
    sig = hb.sigma(data.m, rho, etas, z=z, c1=c1) if add_noise else None
    # per-lane scalars broadcast over (R, n, d), or per agent over (R, n, d) with d last
    per_lane = (slice(None), None, None, None) if etas.ndim == 2 else (slice(None), None, slice(None), None)
    w_tilde, w, gamma = np.zeros((L, R, n, d)), np.zeros((L, R, d)), np.zeros((L, R, n, d))
    for k in range(1, T + 1):
        g = data.mean_grad_lanes(w_tilde) + lam_n * regularizers.subgradient(reg, w_tilde)
        w_local = dpadmm_primal(g, w_tilde, w, gamma, etas[:, k - 1][per_lane], rho)  # (10a)
        if add_noise:
            w_tilde = w_local + stacked_normal(rngs, (n, d))[None] * sig[:, k - 1][per_lane]  # (10b)
        else:
            w_tilde = w_local
        w_new = aggregate(w_tilde, gamma, rho)  # (10c)
        gamma = dual_update(gamma, w_tilde, w_new, rho)  # (10d)
        w = w_new
    return w_tilde


def _checked_run(data: StarData, z: float, add_noise: bool, rngs, c1, T: int, rho: float, lam_n: float):
    """(whether noise is added, the number of repeats R) of a run, once its generators, private data and common
    settings are checked (one check for the run and its lanes)."""
    add_noise = add_noise and z > 0
    if add_noise:
        if rngs is None:
            raise ValueError("a noisy run needs `rngs`, one numpy Generator per repeat (repro_dpadmm.rng)")
        _check_private_data(data, c1)
    R = _repeats(data, rngs, None)
    _check_common(data, T, rho, lam_n, R)
    return add_noise, R


def _check_private_data(data: StarData, c1: float | None):
    if c1 is not None and data.row_norm_max > c1 * (1 + 1e-9):
        raise ValueError(f"the sensitivity (11) assumes ||l'|| <= c_1 = {c1}, i.e. every ||a_ij|| <= c_1, but the "
                         f"largest row norm is {data.row_norm_max:.6g}; normalise the rows (docs/choices.md#adult-preprocessing) or raise c_1")


def dpadmm(data: StarData, *, reg: str, T: int, rngs: Sequence[np.random.Generator] | None = None,
           epsilon: float | None = None, delta: float | None = None, noise_multiplier: float | None = None,
           rho: float = 0.1, lam_n: float = 1e-6, eta=None, c1: float = hb.C1, c_w: float | None = None,
           add_noise: bool = True, record: bool = True, init: dict | None = None, err_every: int = 1) -> History:
    """Algorithm 3 (DP-ADMM): for k = 1..T, every agent computes the closed-form primal step (10a) = (12a)
    ((38a) for l1 with R' = sgn, (39a) for l2 with R' = w), adds xi_i^k ~ N(0, sigma_{i,k}^2 I) (10b) with
    sigma_{i,k} = z 2 c_1 / (m_i (rho + 1/eta_i^k)) (eq. (14); i.i.d. entries, docs/choices.md#noise-samplers), the aggregator forms w^k
    (10c), and the agents update gamma_i^k (10d). Initialisation w^0 = w-tilde^0 = gamma^0 = 0 [D].

    Privacy: (epsilon, delta) per iteration (Theorem 1), or the noise multiplier z = sigma/Delta directly.
    Step sizes: Theorem 3 (29) for l1 (c_w = 23), Theorem 4 (34) for l2 (c_w = 89), computed from the same z, unless
    `eta` is given (shape (T,) or (T, n)). `add_noise=False` keeps the schedule and drops the noise.

    A noisy run records T Gaussian releases of multiplier sigma_{i,k} / Delta_{i,k} = z (eq. (14) over Lemma 1's
    sensitivity (11), the same at every k), claimed by the paper's eps-bar when (epsilon, delta) was given.
    """
    regularizers.check(reg)
    if epsilon is not None or delta is not None:
        if noise_multiplier is not None:
            raise ValueError("give either (epsilon, delta) or noise_multiplier, not both")
        check_epsilon_delta(epsilon, delta, max_epsilon=1.0)  # Theorem 1 needs eps in (0, 1]
        z = hb.noise_multiplier(epsilon, delta)
    elif noise_multiplier is not None:
        z = float(noise_multiplier)
        if not np.isfinite(z) or z < 0:
            raise ValueError(f"the noise multiplier must be >= 0, got {noise_multiplier}")
    else:
        raise ValueError("give the per-iteration (epsilon, delta) or the noise multiplier z")
    add_noise, R = _checked_run(data, z, add_noise, rngs, c1, T, rho, lam_n)
    n, d = data.n, data.d
    if eta is None:
        consts = {"c_w": c_w} if c_w is not None else {}
        eta = hb.eta_schedule(reg, T, data.m, z=z, lam_n=lam_n, d=d, c1=c1, **consts)
    eta = np.asarray(eta, dtype=float)
    if eta.shape not in ((T,), (T, n)) or np.any(~np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError(f"eta must be positive with shape (T,) = ({T},) or (T, n) = ({T}, {n}); got {eta.shape}")
    sig = hb.sigma(data.m, rho, eta, z=z, c1=c1) if add_noise else np.zeros_like(eta)

    w_tilde, w, gamma = _init(data, R, init)
    w_local = w_tilde
    rec = _Recorder(data, reg, lam_n, rho, record, T, err_every)
    t0 = time.perf_counter()
    z_cache = rec(w_tilde, w, 0)
    w_tilde0 = w_tilde
    sum_prev = np.zeros_like(w_tilde)  # sum_{k=0}^{T-1} w-tilde^k (Theorem 3's average)
    for k in range(1, T + 1):
        sum_prev += w_tilde
        g = dpadmm_local_gradient(data, w_tilde, reg, lam_n, z_cache)  # margins reused from the recorder
        w_local = dpadmm_primal(g, w_tilde, w, gamma, eta[k - 1], rho)  # (10a)
        if add_noise:
            s = sig[k - 1]
            w_tilde = w_local + stacked_normal(rngs, (n, d), s[:, None] if np.ndim(s) else s)  # (10b)
        else:
            w_tilde = w_local
        w_new = aggregate(w_tilde, gamma, rho)  # (10c)
        gamma = dual_update(gamma, w_tilde, w_new, rho)  # (10d)
        w = w_new
        z_cache = rec(w_tilde, w, k)
    meta = {"w_tilde": w_tilde, "w_local": w_local, "w": w, "gamma": gamma, "T": T, "eta": eta, "sigma": sig,
            "w_tilde_mean_prev": sum_prev / T,  # (1/t) sum_{k=0}^{t-1} w-tilde_i^k, Theorem 3 (§V-A)
            "w_tilde_mean": (sum_prev - w_tilde0 + w_tilde) / T,  # (1/t) sum_{k=1}^{t} w-tilde_i^k, Theorem 4 (§V-B)
            "noise_multiplier": z, "epsilon": epsilon, "delta": delta, "add_noise": add_noise}
    # sig = z * sensitivity(eta) step by step, so every release's multiplier sigma / Delta is z
    return _history(rec, t0, meta, [hb.gaussian_spend(z, T, delta)] if add_noise else [])
