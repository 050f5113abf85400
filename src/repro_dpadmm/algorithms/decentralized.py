"""Decentralised ADMM over a connected graph: conventional ADMM, M-ADMM, penalty perturbation (PP), DVP, R-ADMM.

Papers: X. Zhang, M. M. Khalili, M. Liu, "Improving the Privacy and Accuracy of ADMM-Based Distributed Algorithms",
ICML 2018 (ZKL-ICML), and "Recycled ADMM: Improve Privacy and Accuracy with Less Computation in Distributed
Algorithms", Allerton 2018 (ZKL-RADMM).

Every node i holds B_i samples and the local objective O(f, D_i) = (C/B_i) sum_n L(y f^T x) + (rho/N) R(f) with the
logistic loss L and R(f) = ||f||^2 / 2 (ICML eq. (2)). All nodes and all repeats run together in the matrix form of
ICML (13)-(14) / Allerton (16)-(19): f-hat, Lambda have shape (repeats, N, d).

Uneven B_i without a Python loop over nodes: all samples form one sparse block matrix Xb (n x N d) in which a sample
of node i occupies the columns of f_i (see NodeData). One sparse product then evaluates every sample's margin for
every node and repeat, and its transpose gives every node's gradient; node means use the weights 1/B_i. Nothing is
padded, and Adult's one-hot rows (about 12 non-zeros of 105) make these products cheap.

Exact local solves (ICML (10)/(25), Allerton (12)/(28)): damped Newton (backtracking on the local objective) on the
strictly convex local objective, warm-started at f_i(t), for all nodes and repeats at once, until every
||grad||/kappa_i <= tol (a bound on the distance to the exact minimiser); a solve that cannot meet it raises
NotConvergedError, so no iterate is ever computed from a half-solved local problem. Each Newton system is
solved by preconditioned conjugate gradients with exact Hessian-vector products (a dense d x d Hessian per node and
repeat would cost n d^2 per step; a Hessian shared by the repeats made the steps diverge under noise).

Privacy as data: a private run (PP, DVP, private R-ADMM) records in its History one `Spend`: the pure-DP budgets per
private iteration of the node whose total is the paper's bound (ICML Thm 4.1 / Allerton Thm IV.1 summands, from the
schedules the run used), under replace-one neighbours ("differing in at most one data point", ICML Def. 4.1), and
the paper's own total P(T) as its bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache, wraps

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from .. import graphs
from ..graphs import check_graph
from ..history import History
from ..kernels import decentralized as kd
from ..kernels.logistic_math import sigmoid_neg_inplace
from ..privacy.bounds import zhang2018 as bounds
from ..privacy.mechanisms import gamma_norm, stacked_gamma_norm
from ..privacy.spend import REPLACE_ONE, Spend, pure_steps
from ..problems.logistic import loss, sigmoid_neg
from ..rng import repeat_generators, seed_sequence, stacked_normal
from ..solvers import require_converged

C1 = bounds.C1  # c_1: bound on L'' for the logistic loss (ICML §5)


@cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def _one_blas_thread(fn):
    """Run fn with BLAS on one thread. Its BLAS products are small ((R, d) @ (d, d) per node, (N, N) @ (N, d)): on a
    2-core machine shared with other jobs, BLAS worker threads spin and doubled the CPU time of a run (issue 20).
    The numbers agree with a multi-threaded BLAS to round-off (they already depended on its thread count)."""
    @wraps(fn)
    def run(*args, **kw):
        with _blas().limit(limits=1, user_api="blas"):
            return fn(*args, **kw)
    return run


# --------------------------------------------------------------------------------------------------- node data
@dataclass(frozen=True)
class NodeData:
    """All nodes' samples as one sparse block matrix.

    Xb (n, N d) CSR: sample s of node i holds its features in columns [i d, (i + 1) d), so that
    Xb @ vec(f-hat) gives every sample's x^T f_{node(s)} and Xb^T @ u gives every node's X_i^T u_i, for all repeats
    at once (columns of f / u). Uneven B_i need no padding. y, w (n,): labels and 1/B_{node(s)}; P (N, n) sparse
    with P[i, s] = 1/B_i (node means); G (N, d, d): X_i^T X_i / B_i; B (N,); node (n,): each sample's node.
    """

    Xb: sp.csr_matrix
    XbT: sp.csr_matrix
    y: np.ndarray
    w: np.ndarray
    P: sp.csr_matrix
    G: np.ndarray
    B: np.ndarray
    node: np.ndarray

    @property
    def eig_G(self):
        """Eigen-decomposition of every X_i^T X_i / B_i, cached: the majoriser preconditioner for any kappa."""
        if "_eig" not in self.__dict__:
            object.__setattr__(self, "_eig", np.linalg.eigh(self.G))
        return self.__dict__["_eig"]

    @property
    def n_nodes(self) -> int:
        return self.B.size

    @property
    def dim(self) -> int:
        return self.G.shape[-1]


def node_data(X, y, parts) -> NodeData:
    """Arrange rows `parts[i]` of (X, y) as node i's data set D_i (see NodeData)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    B = np.array([len(p) for p in parts])
    if np.any(B == 0):
        raise ValueError(f"every node needs at least one sample; node sizes {B.tolist()}")
    N, d = B.size, X.shape[1]
    idx = np.concatenate(parts)
    node = np.repeat(np.arange(N), B)
    Xs = sp.csr_matrix(X[idx])
    Xs.sort_indices()
    # shift the column indices of each row by node * d
    cols = Xs.indices + np.repeat(node * d, np.diff(Xs.indptr))
    Xb = sp.csr_matrix((Xs.data, cols, Xs.indptr), shape=(idx.size, N * d))
    w = 1.0 / B[node]
    P = sp.csr_matrix((w, (node, np.arange(idx.size))), shape=(N, idx.size))
    Gs = (Xb.T @ sp.diags(w) @ Xb).tocoo()  # block diagonal (N d x N d), kept sparse
    G = np.zeros((N, d, d))
    G[Gs.row // d, Gs.row % d, Gs.col % d] = Gs.data
    return NodeData(Xb, Xb.T.tocsr(), y[idx], w, P, G, B, node)


# --------------------------------------------------------------------------------------------------- set-up
def network(X, y, graph: dict, seed: int, *labels: str, split: str = "even", min_size: int | None = None,
            subsample: int | None = None) -> tuple[NodeData, np.ndarray]:
    """(NodeData, A): the rows of (X, y) split over the nodes of the graph `graph` (a `graphs.make_graph` spec).

    split: 'even' or 'uneven' (`graphs.split_data`; `min_size` for uneven), drawn from seed_sequence(seed, *labels,
    'split') so that every item (labels) has its own split. subsample (smoke runs only): a seeded subset of that many
    rows, the same for every item of a seed."""
    A = graphs.make_graph(graph)
    if subsample:  # smoke runs only: a seeded subset of the rows
        keep = np.random.default_rng(seed_sequence(seed, "subsample")).permutation(len(y))[:int(subsample)]
        X, y = X[keep], y[keep]
    split_rng = np.random.default_rng(seed_sequence(seed, *labels, "split"))
    parts = graphs.split_data(len(y), A.shape[0], split_rng, kind=split, min_size=min_size)
    return node_data(X, y, parts), A


def initial_points(seed: int, repeats: int, N: int, d: int, scale: float, *labels: str) -> np.ndarray:
    """f_i(0) ~ N(0, scale^2 I) [D] (ICML Alg. 1 / Allerton Alg. 1: "randomly"), shape (repeats, N, d): one
    generator per repeat, labelled (*labels, 'init'), so every curve of an item starts its repeat r at the same point."""
    return stacked_normal(repeat_generators(seed, repeats, *labels, "init"), (N, d), scale)


def noise_generators(seed: int, repeats: int, *labels: str) -> list[np.random.Generator]:
    """One noise generator per repeat for a private run, labelled (*labels, 'noise')."""
    return repeat_generators(seed, repeats, *labels, "noise")


def _from_cols(u, R, N, d):
    return np.ascontiguousarray(u.T).reshape(R, N, d)


def _margins(data: NodeData, f):
    """y x^T f_{node} for every sample and repeat: (n, R). Compiled (kernels.decentralized.prod), equal bit for bit
    to y[:, None] * (Xb @ f.reshape(R, -1).T) (its reference prod_ref)."""
    R, N = f.shape[:2]
    z = np.empty((data.Xb.shape[0], R))
    kd.prod(data.Xb.indptr, data.Xb.indices, data.Xb.data, data.node, np.ones((R, N), dtype=bool),
            np.ascontiguousarray(f).reshape(R, -1), data.y, z, np.empty(f.size))
    return z


def _node_losses(data: NodeData, z):
    """(1/B_i) sum_n L(z) for each repeat and node at the margins z (n, R): (R, N). The losses with numpy's vectorised
    exp and log1p (problems.logistic.loss), their node sums compiled (kernels.decentralized.weighted_sums), equal bit
    for bit to (data.P @ problems.logistic.loss(z)).T."""
    sums = np.empty((data.n_nodes, z.shape[1]))
    kd.weighted_sums(data.node, data.w, loss(z), sums)
    return sums.T


def local_loss(data: NodeData, f):
    """(1/B_i) sum_n L(y f_i^T x) for each repeat and node: (R, N)."""
    return _node_losses(data, _margins(data, f))


def local_grad(data: NodeData, f):
    """Gradient of (1/B_i) sum_n L(y f_i^T x) at f_i: (R, N, d)."""
    R, N, d = f.shape
    s = -(data.y * data.w)[:, None] * sigmoid_neg(_margins(data, f))
    return _from_cols(data.XbT @ s, R, N, d)


def average_loss(data: NodeData, f):
    """L(t) = (1/N) sum_i (1/B_i) sum_n L(y f_i(t)^T x) (ICML §5, Allerton §V): (R,)."""
    return local_loss(data, f).mean(axis=-1)


def optimum_loss(data: NodeData, fc: np.ndarray) -> float:
    """L of the centralised optimum f_c (d,) placed at every node: the reference L* every loss curve is read against."""
    return float(average_loss(data, np.broadcast_to(fc, (1, data.n_nodes, data.dim)))[0])


def zero_model_loss(data: NodeData) -> float:
    """L of the zero model f_i = 0 on the nodes' data: the trivial reference every trained model must beat (ln 2 for
    the logistic loss, whatever the data, since every margin is 0)."""
    return float(average_loss(data, np.zeros((1, data.n_nodes, data.dim)))[0])


# --------------------------------------------------------------------------------------------------- local solver
@dataclass(frozen=True)
class LocalSolve:
    """Result of one batched local solve: the minimisers f (R, N, d), the Newton steps each (repeat, node) problem
    needed (R, N), the damped steps among them (R, N; a step shorter than the full Newton step), and the certified
    bound max ||grad||/kappa on the distance to the exact minimisers."""

    f: np.ndarray
    steps: np.ndarray
    damped: np.ndarray
    residual: float


@_one_blas_thread
def solve_local(data: NodeData, f_start, kappa, b, C, *, tol: float = 1e-9, max_steps: int = 100,
                max_cg: int = 100, damped: bool = True, problem: str = "ZKL local problem",
                flat_below: float = 0.3, z_start=None, independent_repeats: bool = False) -> LocalSolve:
    """argmin_f  phi(f) = C (1/B_i) sum_n L(y f^T x) + (kappa_i / 2) ||f||^2 + b_i^T f  for every repeat and node.

    Damped Newton from the warm start f_start (R, N, d); kappa (N,), b (R, N, d). Each Newton system
    is solved by conjugate gradients with exact Hessian-vector products (two sparse products over all nodes and
    repeats), preconditioned by the majoriser C X_i^T X_i / (4 B_i) + kappa_i I (one eigen-decomposition per node for
    the whole run, valid for every kappa). The step length is found by backtracking on phi itself (Armijo, halving),
    separately for every problem; the trial margins are z - s y x^T p, so a trial costs no sparse product, and the
    loss change is computed as log1p(sigma(-z) expm1(s y x^T p)), accurate even when it is far below phi's
    round-off. A problem stops when ||grad phi|| / kappa_i <= tol: phi is kappa_i-strongly convex, so this bounds
    the distance to its exact minimiser by tol. If any problem has not met it after max_steps Newton steps (or its
    line search cannot decrease phi), NotConvergedError names the problem, the step and the residual.
    `damped=False` is plain Newton (full steps), kept only to show why it is unsafe (it diverges from some starts).

    Active set: a problem that met tol takes no further step, and the CG iterations stop once every unconverged
    problem meets its forcing target. While most problems are unconverged they are solved in the column layout of
    NodeData (one sparse product serves every repeat); once at most the fraction `flat_below` is left, the work moves
    to a layout of the unconverged problems alone (_Flat), so the last Newton steps cost in proportion to what is left.
    `flat_below` is a choice of speed only: both layouts compute every problem's numbers identically.
    z_start: the margins y x^T f_start (_margins), when the caller has them already (the traces of the run).

    independent_repeats: the repeats are lanes of separate runs (e.g. a noisy run and its noise-free twin on the same
    nodes): the CG forcing term is each repeat's own (from its own gradients) and a repeat's CG stops when its own
    problems meet their targets, so every repeat's numbers are those of a run of that repeat alone, bit for bit
    (tests/algorithms/test_decentralized.py). Default: one forcing term and one CG stop for all problems.
    Lanes may differ in C ((R,): each repeat's own) and kappa ((R, N)), e.g. one run per privacy level: then each
    repeat has its own preconditioner (M_i^{-1} per repeat and node, formed once per distinct (C, kappa_i)), and
    the repeats must be independent.
    """
    R, N, d = f_start.shape
    kappa = np.asarray(kappa, dtype=float)
    b = np.asarray(b, dtype=float)
    per_lane = np.ndim(C) == 1 or kappa.ndim == 2
    if per_lane and not independent_repeats:
        raise ValueError("lanes with their own C or kappa are separate runs: solve them with independent_repeats=True")
    C_rn = np.broadcast_to(np.reshape(np.asarray(C, dtype=float), (-1, 1)), (R, N))   # every problem's C and kappa
    kap_rn = np.broadcast_to(kappa, (R, N))
    M_inv = _majoriser_inverse(data, C_rn, kap_rn) if per_lane else _majoriser_inverse(data, C, kappa)
    f = f_start.copy()
    z = _margins(data, f) if z_start is None else z_start.copy()  # (n, R)
    g = np.empty_like(f)
    steps = np.zeros((R, N), dtype=int)
    n_damped = np.zeros((R, N), dtype=int)
    lay = _Columns(data, M_inv)  # the problems being worked on, and their state:
    lay.rowwise = independent_repeats
    sel, fb, bb, Cb, kap, zb, gb = (slice(None), slice(None)), f, b, C_rn, kap_rn, z, g
    sg = np.empty_like(z)
    moved = np.ones((R, N), dtype=bool)  # problems whose f changed since their gradient was computed (all at first)
    for it in range(max_steps + 1):
        lay.grad(moved, zb, sg, Cb, kap, fb, bb, gb)  # sigma(-z) and the gradient where f moved; the rest stand
        if gb is not g:
            g[sel] = gb
        res = np.sqrt((g ** 2).sum(-1)) / kap_rn  # (R, N): bound on the distance to the minimiser
        if not np.all(np.isfinite(res)):
            require_converged(problem + " (non-finite gradient: the iterates diverged)", it, res, tol)
        active_all = res > tol
        if not active_all.any() or it == max_steps:
            break
        if independent_repeats:   # each repeat's own forcing term, min(0.1, sqrt(max |g|)) over its problems
            forcing_r = np.minimum(0.1, np.sqrt(np.abs(g).reshape(R, -1).max(axis=1)))
        else:
            forcing = min(0.1, float(np.sqrt(np.abs(g).max())))
        n_active = int(active_all.sum())
        if n_active <= flat_below * R * N and (lay.size is None or n_active < lay.size):  # (re)build _Flat
            f[sel] = fb
            z[lay.rows, lay.rep] = zb
            lay = _Flat(data, *np.nonzero(active_all), M_inv, R)
            lay.rowwise = independent_repeats
            sel = (lay.r, lay.i)
            fb, bb, Cb, kap, zb, gb = f[sel], b[sel], C_rn[sel], kap_rn[sel], z[lay.rows, lay.rep], g[sel]
            sg = sigmoid_neg(zb)
        active = active_all[sel]

        def hvp(v, lay=lay, sg=sg, Cb=Cb, kap=kap, active=active):
            return lay.hvp(active, sg, Cb, kap, v)

        if independent_repeats:   # the repeat of every row of the layout: its lane
            rep = np.broadcast_to(np.arange(R)[:, None], (R, N)) if lay.size is None else lay.r
            forcing, groups = forcing_r[rep][..., None], (rep, R)
        else:
            groups = None
        p, r_cg = _pcg(hvp, lay.precond, gb, max_cg, forcing=forcing, active=active[..., None], groups=groups)
        p[~active] = 0.0
        zp = lay.prod(active, p)  # y x^T p for every sample, so that z(f - s p) = z - s zp
        s = np.ones(active.shape)
        if damped:
            slope = (gb * p).sum(-1)  # > 0: p is a descent direction (CG iterate on a positive definite system)
            ok = ~active | full_step_certified(slope, slope - (p * r_cg).sum(-1), lay.absmax(zp))
            for _ in range(0 if ok.all() else 60):
                trial = np.where(ok, 0.0, s)
                change = _phi_change(lay, zb, zp, sg, trial, fb, p, bb, lay.kap(kap), Cb)  # phi(f - s p) - phi(f)
                ok |= change <= -1e-4 * trial * slope
                if ok.all():
                    break
                s = np.where(ok, s, 0.5 * s)
            if not ok.all():
                failed = np.zeros((R, N))
                failed[sel] = np.where(ok, 0.0, res[sel])
                require_converged(problem + " (line search found no decrease)", it, failed, tol)
            n_damped[sel] += (s < 1.0) & active
        s = np.where(active, s, 0.0)
        fb = fb - s[..., None] * p
        kd.take_step(lay.csr[3], lay.a2(s), lay.s2(zp), lay.s2(zb))  # z(f - s p) = z - s zp, in place
        steps[sel] += active
        moved = active
    f[sel] = fb
    require_converged(problem, int(steps.max()), res, tol,
                      hint="" if damped else "plain Newton, no line search")
    return LocalSolve(f, steps, n_damped, float(res.max()))


class _Layout:
    """What the two layouts share: the kernels (kernels/decentralized.py) over their CSR matrix `X`, whose row i is a
    sample of the block `blk[i]` (a node in _Columns, a problem in _Flat). `v2`, `s2` and `a2` view a per-problem
    vector, a per-sample array and a per-problem mask as the kernels' (repeats, columns), (rows, repeats) and
    (repeats, blocks) arrays, `b2` a per-problem scalar as their (blocks, repeats) array."""

    def _set_kernel_data(self, X, blk, y, w):
        """X: the CSR arrays (indptr, indices, data) of the layout's matrix."""
        self.csr = (*X, blk)
        self.y1, self.w1, self.yw1 = y, w, y * w
        self._work = {}

    def work(self, name, shape):
        """A work array kept for the layout's lifetime (large temporaries cost a page fault per page when fresh)."""
        a = self._work.get(name)
        if a is None or a.shape != shape:
            a = self._work[name] = np.empty(shape)
        return a

    def grad(self, act, z, sg, C, kap, f, b, g):
        """sigma(-z) into sg (every sample, with numpy's vectorised exp: a problem that has not moved gets the value it
        had) and grad phi into g, in place, for the problems marked in act (the rest stand). C, kap: per problem."""
        np.copyto(sg, z)
        sigmoid_neg_inplace(sg)
        f2 = self.v2(f)
        kd.grad(*self.csr, self.a2(act), self.yw1, self.s2(sg), self.b2(C), self.b2(kap), self.d, f2, self.v2(b),
                self.v2(g), self.work("ot", (f2.size,)))

    def hvp(self, act, sg, C, kap, v):
        """The Hessian of phi times v for the problems marked in act (kap * v for the rest). C, kap: per problem."""
        out, v2 = np.empty(v.shape), self.v2(v)
        kd.hvp(*self.csr, self.a2(act), self.w1, self.b2(C), self.s2(sg), self.b2(kap), self.d, v2, self.v2(out),
               self.work("vt", (v2.size,)), self.work("ot", (v2.size,)))
        return out

    def prod(self, act, p):
        """y x^T p for every sample of the problems marked in act (0 for the rest); the array is reused by the next
        call."""
        out, p2 = self.work("zp", self.sample_shape(act)), self.v2(p)
        kd.prod(*self.csr, self.a2(act), p2, self.y1, self.s2(out), self.work("vt", (p2.size,)))
        return out


class _Columns(_Layout):
    """Every (repeat, node) problem in the column layout of NodeData: a per-problem vector is (R, N, d), a
    per-sample array (n, R) (a column per repeat), so that one sparse product serves all repeats."""

    size = None  # every problem, converged or not

    def __init__(self, data: NodeData, M_inv):
        self.data, self.M_inv, self.d = data, M_inv, data.dim
        self.y, self.w, self.yw = data.y[:, None], data.w[:, None], (data.y * data.w)[:, None]
        self.rows = self.rep = slice(None)
        self._set_kernel_data((data.Xb.indptr, data.Xb.indices, data.Xb.data), data.node, data.y, data.w)

    def v2(self, v):
        return np.ascontiguousarray(v).reshape(v.shape[0], -1)

    def s2(self, x):
        return x

    def a2(self, act):
        return act

    def b2(self, x):
        return np.ascontiguousarray(x.T)

    def kap(self, kappa):
        return kappa[:, :, None]

    def sample_shape(self, act):
        return self.data.Xb.shape[0], act.shape[0]

    def means(self, dl, z, u):  # (1/B_i) sum over the samples of every problem: (R, N); see _phi_change
        out = np.empty((self.data.n_nodes, dl.shape[1]))
        kd.loss_change_sums(self.csr[3], self.w1, z, u, dl, out)
        return out.T

    def absmax(self, x):  # max |x| over the samples of every problem: (R, N)
        out = np.empty((self.data.n_nodes, x.shape[1]))
        kd.block_absmax(self.csr[3], x, out)
        return out.T

    rowwise = False   # set by solve_local for independent repeats (`_precond`)

    def precond(self, v):  # M_i^{-1} v for every node and repeat, one batched BLAS product over the nodes
        return _precond(np.ascontiguousarray(v.transpose(1, 0, 2)), self.M_inv, self.rowwise).transpose(1, 0, 2)


class _Flat(_Layout):
    """The problems (repeat r[k], node i[k]) alone: a per-problem vector is (P, d), a per-sample array holds the
    samples of problem 0, then of problem 1, ... A block-diagonal copy of the problems' rows of Xb (one column block
    per problem) keeps every row's entries in their order, so every product, mean and preconditioned vector equals
    the corresponding entries of the column layout bit for bit (tests/algorithms/test_decentralized.py)."""

    def __init__(self, data: NodeData, r, i, M_inv, R: int):
        d, P = data.dim, r.size
        self.r, self.i, self.size = r, i, P
        start = np.cumsum(data.B) - data.B
        lens = data.B[i]
        # the samples of every problem, problem by problem, the problem of every sample, and the block-diagonal copy
        Xb = data.Xb
        self.rows, k, *X = kd.flat_rows(Xb.indptr, Xb.indices, Xb.data, start[i], lens, d)
        self.rep = np.repeat(r, lens)
        self.y, self.w = data.y[self.rows], data.w[self.rows]
        self.yw = self.y * self.w
        self.lens, self.d = lens, d
        self._set_kernel_data(X, k, self.y, self.w)
        # the preconditioner acts in the column layout (node, repeat, d) of the nodes that hold a problem: the same
        # (R, d) @ (d, d) BLAS products as in _Columns, so the same numbers
        nodes, self.pos = np.unique(i, return_inverse=True)
        self.M_inv, self.shape = M_inv[nodes], (nodes.size, R, d)

    def v2(self, v):
        return np.ascontiguousarray(v).reshape(1, -1)

    def s2(self, x):
        return x.reshape(-1, 1)

    def a2(self, act):
        return act.reshape(1, -1)

    def b2(self, x):
        return x[:, None]

    def kap(self, kappa):
        return kappa[:, None]

    def sample_shape(self, act):
        return self.rows.size

    def means(self, dl, z, u):
        out = np.empty((self.size, 1))
        kd.loss_change_sums(self.csr[3], self.w1, self.s2(z), u, dl, out)
        return out[:, 0]

    def absmax(self, x):
        out = np.empty((self.size, 1))
        kd.block_absmax(self.csr[3], self.s2(x), out)
        return out[:, 0]

    rowwise = False

    def precond(self, v):
        cols = np.zeros(self.shape)
        cols[self.pos, self.r] = v
        return _precond(cols, self.M_inv, self.rowwise)[self.pos, self.r]


def _precond(cols, M_inv, rowwise: bool):
    """M_i^{-1} applied to cols (nodes, R, d): one (R, d) @ (d, d) BLAS product per node, or with `rowwise` one
    (1, d) @ (d, d) product per node and repeat, the product a run of that repeat alone makes (a BLAS product of
    two rows need not give each row the bits of a product of one). M_inv (nodes, d, d), or (nodes, R, d, d) with a
    preconditioner per repeat (lanes of their own C or kappa; rowwise)."""
    if M_inv.ndim == 4:
        return (cols[:, :, None, :] @ M_inv)[:, :, 0, :]
    if not rowwise:
        return cols @ M_inv
    return (cols[:, :, None, :] @ M_inv[:, None])[:, :, 0, :]


def _majoriser_inverse(data: NodeData, C, kappa) -> np.ndarray:
    """M_i^{-1} = (C X_i^T X_i / (4 B_i) + kappa_i I)^{-1} from the eigen-decomposition of G_i = X_i^T X_i / B_i:
    (N, d, d) for a scalar C and kappa (N,); per repeat (N, R, d, d) for C and kappa given per problem (R, N), each
    repeat's as a solve of that repeat alone forms it (lanes with the same C and kappa share one)."""
    lam_G, U = data.eig_G

    def one(c, kap):
        scale = 1.0 / (0.25 * c * lam_G + kap[:, None])  # (N, d): the majoriser's inverse in its eigenbasis
        return (U * scale[:, None, :]) @ U.transpose(0, 2, 1)  # (N, d, d), symmetric

    if np.ndim(C) == 0:
        return one(C, kappa)
    made = {}
    for r in range(C.shape[0]):
        key = (float(C[r, 0]), kappa[r].tobytes())
        if key not in made:
            made[key] = one(float(C[r, 0]), kappa[r])
    return np.stack([made[(float(C[r, 0]), kappa[r].tobytes())] for r in range(C.shape[0])], axis=1)


def _phi_change(lay, z, zp, sg, s, f, p, b, kap, C):
    """phi(f - s p) - phi(f) for every problem of the layout `lay`, computed without cancellation: per sample
    L(z - s zp) - L(z) = log1p(sigma(-z) expm1(s zp)) (direct difference where |s zp| > 1, where it is large)."""
    u, dl = lay.work("u", lay.s2(zp).shape), lay.work("dl", lay.s2(zp).shape)
    kd.step_change(lay.csr[3], lay.a2(s), lay.s2(zp), u, dl)
    np.expm1(dl, out=dl)  # numpy's (vectorised) expm1 and log1p, as before the kernels
    dl *= lay.s2(sg)
    np.log1p(dl, out=dl)  # log1p(sigma(-z) expm1(u)); the samples with |u| > 1 take the direct difference
    dloss = lay.means(dl, z, u)  # change of the node means
    sv = s[..., None]
    quad = (kap * (-sv * f * p + 0.5 * sv ** 2 * p * p)).sum(-1) - (s * (b * p).sum(-1))
    return C * dloss + quad


def _pcg(hvp, precond, g, max_iter, forcing, active=None, groups=None):
    """Solve H p = g for every problem at once by preconditioned CG; stop when every active problem (mask `active`,
    shaped like g with last axis 1; default all) has ||r|| <= forcing ||g|| (`forcing`: a scalar, or one per
    problem shaped like `active`). `groups` = (group of every problem, shaped like g without its last axis; number of
    groups): a group's iterate p stops at the iteration where all its active problems meet their targets, as it would
    in a solve of that group alone; the others go on. Returns p and its residual r = g - H p (CG's recurrence)."""
    done = np.zeros(g.shape[:-1] + (1,), dtype=bool) if active is None else ~active
    frozen = np.zeros_like(done)   # problems of the groups whose CG has stopped
    p = np.zeros_like(g)
    r = g.copy()
    z = precond(r)
    q = z.copy()
    rz = (r * z).sum(-1, keepdims=True)
    target = (forcing * np.sqrt((g ** 2).sum(-1, keepdims=True))) ** 2
    for _ in range(max_iter):
        Hq = hvp(q)
        qHq = (q * Hq).sum(-1, keepdims=True)
        a = np.divide(rz, qHq, out=np.zeros_like(rz), where=qHq > 0)
        if groups is None:
            p += a * q
        else:
            p = np.where(frozen, p, p + a * q)
        if groups is None:
            r -= a * Hq
        else:   # a stopped group keeps the residual of its p
            r = np.where(frozen, r, r - a * Hq)
        rr = (r ** 2).sum(-1, keepdims=True)
        met = (rr <= target) | done
        if groups is None:
            if np.all(met):
                break
        else:
            group, n_groups = groups
            all_met = np.ones(n_groups, dtype=bool)
            np.logical_and.at(all_met, group.reshape(-1), met.reshape(-1))
            frozen = frozen | all_met[group][..., None]
            if frozen.all():
                break
        z = precond(r)
        rz_new = (r * z).sum(-1, keepdims=True)
        beta = np.divide(rz_new, rz, out=np.zeros_like(rz), where=rz > 0)
        q = z + beta * q
        rz = rz_new
    return p, r


def full_step_certified(slope, curv, nu, c1: float = 1e-4, margin: float = 0.9):
    """The problems whose full Newton step f - p surely meets Armijo's condition phi(f - p) - phi(f) <= -c1 g^T p,
    from what the step has computed already: slope = g^T p, curv = p^T H p (by CG's residual, H p = g - r) and
    nu = max |y x^T p| over the problem's samples (lay.absmax).

    Along the step the loss term l(s) = C mean L(z - s zp) has third derivative at most nu times its second (the
    logistic loss has |L^(3)| <= L^(2)), so l''(s) <= l''(0) e^(nu s); integrated twice, with the quadratic terms exact,
    phi(f - p) - phi(f) <= -slope + curv psi(nu), psi(nu) = (e^nu - 1 - nu) / nu^2 (the self-concordance bound of
    Bach 2010 for the logistic loss). The line search would accept s = 1 at its first trial, so skipping that trial
    changes no number; `margin` leaves room for round-off in curv and in the trial's own sums."""
    small = nu < 1e-3
    psi = np.where(small, 0.5 + nu / 5.0, (np.expm1(nu) - nu) / np.where(small, 1.0, nu) ** 2)
    return (slope > 0) & (curv > 0) & (curv * psi <= margin * (1.0 - c1) * slope)


def pooled(data: NodeData) -> NodeData:
    """All samples as one node that keeps every sample's weight 1/B_{node(s)}: its local objective with kappa = rho
    and b = 0 is objective (1) of ICML / Allerton, sum_i (C/B_i) sum_n L(y f^T x) + rho ||f||^2 / 2."""
    d = data.dim
    Xs = sp.csr_matrix((data.Xb.data, data.Xb.indices % d, data.Xb.indptr), shape=(data.Xb.shape[0], d))
    n = Xs.shape[0]
    P = sp.csr_matrix((data.w, (np.zeros(n, dtype=int), np.arange(n))), shape=(1, n))
    G = (Xs.T @ sp.diags(data.w) @ Xs).toarray()[None]
    return NodeData(Xs, Xs.T.tocsr(), data.y, data.w, P, G, np.array([n]), np.zeros(n, dtype=int))


def centralized_optimum(data: NodeData, C: float, rho: float, *, tol: float = 1e-10, max_steps: int = 100):
    """f_c* of ICML eq. (1): min sum_i (C/B_i) sum_n L(y f^T x) + rho ||f||^2 / 2, by the same damped Newton solver
    from f = 0, to ||grad||/rho <= tol (raises NotConvergedError otherwise)."""
    one = pooled(data)
    sol = solve_local(one, np.zeros((1, 1, data.dim)), np.array([float(rho)]), np.zeros((1, 1, data.dim)), C,
                      tol=tol, max_steps=max_steps, problem="centralised optimum of ZKL eq. (1)")
    return sol.f[0, 0]


# --------------------------------------------------------------------------------------------------- schedules
def geometric(first, q, T: int):
    """x(t) = first * q^(t-1) for t = 1..T: (T,) or (T, N) when first or q are per node."""
    t = np.arange(T, dtype=float).reshape(-1, *([1] * max(np.ndim(first), np.ndim(q))))
    return np.asarray(first, dtype=float) * np.asarray(q, dtype=float) ** t


def _per_node(x, T: int, N: int, name: str):
    """Broadcast a scalar, (T,), (N,)-shaped... schedule to (T, N); a (T,) array is taken as per iteration."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        x = np.full((T, N), float(x))
    elif x.ndim == 1:
        if x.size != T:
            raise ValueError(f"{name} schedule has {x.size} entries, expected one per iteration ({T})")
        x = np.repeat(x[:, None], N, axis=1)
    if x.shape != (T, N):
        raise ValueError(f"{name} schedule must broadcast to (iterations, nodes) = {(T, N)}, got {x.shape}")
    return x


def _check_common(data: NodeData, A, C, rho, f0):
    A = check_graph(A)
    if A.shape[0] != data.n_nodes:
        raise ValueError(f"the graph has {A.shape[0]} nodes but the data is split over {data.n_nodes}")
    f0 = np.asarray(f0, dtype=float)
    if f0.ndim != 3 or f0.shape[1:] != (data.n_nodes, data.dim):
        raise ValueError(f"f0 must have shape (repeats, N, d) = (R, {data.n_nodes}, {data.dim}), got {f0.shape}")
    for name, v in (("C", C), ("rho", rho)):
        if np.ndim(v) not in (0, 1) or (np.ndim(v) == 1 and len(v) != f0.shape[0]):
            raise ValueError(f"{name} must be a number or one per repeat ({f0.shape[0]}), got shape {np.shape(v)}")
    if not np.all(np.asarray(C) > 0) or not np.all(np.asarray(rho) > 0):
        raise ValueError(f"C and rho must be > 0, got C={C}, rho={rho}")
    if np.any(np.max(C) > data.B):
        raise ValueError(f"ZKL eq. (1) requires C <= B_i for every node, but C = {np.max(C)} and min B_i = "
                         f"{data.B.min()}; lower C or give every node more samples")
    return A, f0


def _lane_parameters(C, rho, independent_repeats: bool):
    """(C, rho, per_lane): C and rho as given (numbers), or as (R,) arrays with per_lane True; lanes of their own C or
    rho are separate runs, so their repeats must be independent (solve_local)."""
    per_lane = np.ndim(C) == 1 or np.ndim(rho) == 1
    if per_lane and not independent_repeats:
        raise ValueError("lanes with their own C or rho are separate runs: run them with independent_repeats=True")
    if per_lane:
        return np.asarray(C, dtype=float), np.asarray(rho, dtype=float), True
    return C, rho, False


def _lane_alphas(alpha, rows: int, N: int, R: int):
    """None, one (rows, N) schedule for every repeat, or with a list of R schedules (lanes of their own noise level)
    an (R, rows, N) array."""
    if isinstance(alpha, (list, tuple)):
        if len(alpha) != R:
            raise ValueError(f"alpha: one schedule per repeat ({R}) expected, got {len(alpha)}")
        return np.stack([_alpha_schedule(a, rows, N) for a in alpha])
    return _alpha_schedule(alpha, rows, N)


def _lane_kappa(rho, N: int, e, V):
    """kappa_i = rho/N + 2 eta_i V_i: (N,), or (R, N) for a rho per lane (the same operations per lane)."""
    if np.ndim(rho) == 1:
        return rho[:, None] / N + 2.0 * e * V
    return rho / N + 2.0 * e * V


def _alpha_schedule(alpha, rows: int, N: int):
    """None (a non-private run) or the noise parameters alpha_i as a (rows, N) schedule, all > 0."""
    if alpha is None:
        return None
    alpha = _per_node(alpha, rows, N, "alpha")
    if np.any(alpha <= 0):
        raise ValueError(f"noise parameters alpha must all be > 0 (density exp(-alpha ||eps||)); got min "
                         f"{np.min(alpha)}")
    return alpha


def _noise(rngs, d, alpha_row, R, N):
    """Every repeat's perturbation (R, N, d) at alpha_row (N,), or (R, N) for a lane's own; a repeat whose generator
    is None draws none (zeros: a noise-free twin run as a lane beside a private one)."""
    if rngs is None or len(rngs) != R:
        raise ValueError(f"a private run needs one generator per repeat ({R})")
    if np.ndim(alpha_row) == 2:
        return np.stack([np.zeros((N, d)) if g is None else gamma_norm(g, d, a, (N,))
                         for g, a in zip(rngs, alpha_row)])
    if all(g is not None for g in rngs):
        return stacked_gamma_norm(rngs, d, alpha_row, size=(N,))
    out = np.zeros((R, N, d))
    drawn = [r for r, g in enumerate(rngs) if g is not None]
    if drawn:
        out[drawn] = stacked_gamma_norm([rngs[r] for r in drawn], d, alpha_row, size=(N,))
    return out


def _solver_meta(solves) -> dict:
    """Newton steps per local problem over a run: most, mean, total, and how many steps were damped; the number of
    local problems solved (repeats x nodes x data steps); worst residual."""
    steps = np.stack([x.steps for x in solves])
    return {"newton_steps_max": int(steps.max()), "newton_steps_mean": float(steps.mean()),
            "newton_steps_total": int(steps.sum()), "local_solves": int(steps.size),
            "newton_damped_steps": int(sum(int(x.damped.sum()) for x in solves)),
            "local_residual_max": float(max(x.residual for x in solves))}


def _worst_node_spend(per_step, bound: str, bound_args: dict) -> Spend:
    """The Spend of a private ZKL run: the pure-DP budgets per private iteration, per_step(**bound_args) of shape
    (steps, N), of the node whose total is the largest (the max over nodes in ICML (26) / Allerton (30): a record
    lives at one node, and only that node's releases depend on it), composed as pure steps, with the paper's bound
    `bound` over `bound_args`."""
    budgets = per_step(**bound_args)
    worst = int(np.cumsum(budgets, axis=0)[-1].argmax())
    return Spend(pure_steps(budgets[:, worst]), REPLACE_ONE, bound, bound_args)


def _run_spends(per_step, bound: str, alpha, lanes: dict, **args) -> list[Spend]:
    """A private run's spends: one (_worst_node_spend over `lanes` and `args`), or where alpha or a value of `lanes`
    (e.g. C, rho) is given per repeat, one per repeat, in repeat order; none for a noise-free run."""
    if alpha is None:
        return []
    if np.ndim(alpha) < 3 and all(np.ndim(v) == 0 for v in lanes.values()):
        return [_worst_node_spend(per_step, bound, {**lanes, **args, "alpha": alpha})]
    R = len(alpha) if np.ndim(alpha) == 3 else next(len(v) for v in lanes.values() if np.ndim(v) == 1)
    return [_worst_node_spend(per_step, bound, {**{k: float(v[r]) if np.ndim(v) == 1 else v for k, v in lanes.items()},
                                                **args, "alpha": alpha[r] if np.ndim(alpha) == 3 else alpha})
            for r in range(R)]


def _history(Ls, dists, fc, solves, spends, dual_sums, **meta) -> History:
    """A run's History: traces 'L', 'dist' (with fc), 'dual_sum' and 'newton_steps' (most Newton steps of any node's
    local solve per data step), the solver summary and `meta`, and the privacy records `spends`."""
    traces = {"L": np.stack(Ls, axis=1), "dual_sum": np.stack(dual_sums, axis=1)}
    if fc is not None:
        traces["dist"] = np.stack(dists, axis=1)
    traces["newton_steps"] = np.stack([x.steps.max(axis=1) for x in solves], axis=1)
    return History(traces, {**_solver_meta(solves), **meta}, spends)


def dual_sum(lam) -> np.ndarray:
    """||sum_i lambda_i||_2 per repeat, (R,): zero at every t when lambda(0) = 0 and every node uses the same dual
    step, because sum_i sum_{j in V_i} (f_i - f_j) = 0 (ICML (14): 1^T (D - A) = 0). At a consensual fixed point the
    KKT conditions (12) sum to sum_i grad O(f) = -2 sum_i lambda_i, so a non-zero sum moves the limit away from f_c*
    of (1) (Lemma 3.1 needs Lambda in the column space of D - A)."""
    return np.sqrt((lam.sum(axis=1) ** 2).sum(axis=-1))


def _traces(data, f, fc):
    """L(t), the distance to fc (or None) and the margins at f, which the next local solve starts from."""
    z = _margins(data, f)
    L = _node_losses(data, z).mean(axis=-1)  # average_loss(data, f), one pass over the data for both
    dist = np.sqrt(((f - fc) ** 2).sum(axis=(-1, -2))) if fc is not None else None
    return L, dist, z


# --------------------------------------------------------------------------------------------------- M-ADMM / PP
@_one_blas_thread
def m_admm(data: NodeData, A, *, C, rho, eta, theta, f0, alpha=None, rngs=None, fc=None,
           tol: float = 1e-9, max_steps: int = 100, keep_iterates: bool = False,
           independent_repeats: bool = False) -> History:
    """M-ADMM (ICML eqs. (10)-(11)) and, with `alpha`, its private version by penalty perturbation (Algorithm 1).

    eta: eta_i(t) for t = 1..T, shape (T, N) (per node) or (T,) (common); T is its length.
    theta: dual steps, (T, N), (T,) or scalar (fixed, time-varying or per node); alpha: alpha_i(t) or None.
    Convergence (Thm 3.1) needs eta_i(t+1) >= eta_i(t) >= theta; theta > eta is rejected.
    With eta = theta this is conventional ADMM (8)-(9) and, with noise, DVP (ICML §4: 'if eta_i(t+1) = eta = theta ... reduced to the dual
    variable perturbation').
    Traces: 'L' (R, T+1) average loss, 'dist' ||f-hat(t) - 1 f_c*^T||_F if fc is given, 'dual_sum' (R, T+1) the
    invariant ||sum_i lambda_i(t)|| (`dual_sum`; it leaves 0 when theta differs between nodes), 'newton_steps' (R, T)
    the most Newton steps of any node's local solve at t = 1..T; meta 'step_seconds' (T,): wall time of each
    iteration's update (local solves and dual step, all repeats, traces excluded). Every local solve meets
    ||grad||/kappa <= tol or raises NotConvergedError (solve_local). A private run records its Spend: per iteration t the pure-DP budget
    C (1.4 c_1 + alpha_i(t)) / (eta_i(t) V_i B_i) of Theorem 4.1 (26), bound 'zhang2018.icml_P' (P(T)).
    keep_iterates: also meta 'f_path' and 'lam_path', f-hat(t) and Lambda(t) for t = 0..T, (T+1, R, N, d) each (the
    quantities of Theorem 3.1's (19); small runs only).
    Lanes of separate runs (independent_repeats): C and rho may be given per repeat, (R,), and alpha as a list of R
    schedules (e.g. one run per privacy level, each with its noise-free twin); each repeat's numbers are then those
    of its run alone, and the spends one per repeat, in repeat order.
    """
    A, f0 = _check_common(data, A, C, rho, f0)
    C, rho, _ = _lane_parameters(C, rho, independent_repeats)
    if np.ndim(eta) == 0:
        raise ValueError("eta must be a schedule over iterations, shape (T,) or (T, N)")
    T = np.shape(eta)[0]
    R, N, d = f0.shape
    eta = _per_node(eta, T, N, "eta")
    theta = _per_node(theta, T, N, "theta")
    if np.any(theta <= 0):
        raise ValueError("the dual step theta must be > 0")
    if np.any(theta > eta + 1e-12):
        t, i = np.argwhere(theta > eta + 1e-12)[0]
        raise ValueError(f"M-ADMM needs eta_i(t) >= theta (ICML Thm 3.1) but at t = {t + 1}, node {i}: "
                         f"theta = {theta[t, i]} > eta = {eta[t, i]}; raise eta or lower theta")
    alpha = _lane_alphas(alpha, T, N, R)
    V = A.sum(1)
    lam = np.zeros_like(f0)
    f = f0.copy()
    L0, dist0, z = _traces(data, f, fc)
    Ls, dists, sums = [L0], [dist0], [dual_sum(lam)]
    path = {"f_path": [f.copy()], "lam_path": [lam.copy()]} if keep_iterates else {}
    solves, seconds = [], np.empty(T)
    for t in range(T):
        start = time.perf_counter()
        e = eta[t]  # eta_i(t+1)
        kappa = _lane_kappa(rho, N, e, V)
        # gradient of the penalty at f: 2 eta V_i f - eta sum_j (f_i(t) + f_j(t))
        b = 2.0 * lam - e[:, None] * (V[:, None] * f + A @ f)
        if alpha is not None:
            eps = _noise(rngs, d, alpha[:, t] if alpha.ndim == 3 else alpha[t], R, N)
            b = b + 2.0 * (e * V)[:, None] * eps  # (24) == dual perturbation by eta_i V_i eps_i (ICML §4)
        sol = solve_local(data, f, kappa, b, C, tol=tol, max_steps=max_steps, z_start=z,
                          problem=f"M-ADMM local problem (10)/(25) at t = {t + 1}",
                          independent_repeats=independent_repeats)
        f = sol.f
        solves.append(sol)
        lam = lam + 0.5 * theta[t][:, None] * (V[:, None] * f - A @ f)  # (11)/(14)
        seconds[t] = time.perf_counter() - start
        L, dist, z = _traces(data, f, fc)
        Ls.append(L)
        dists.append(dist)
        sums.append(dual_sum(lam))
        if keep_iterates:
            path["f_path"].append(f.copy())
            path["lam_path"].append(lam.copy())
    spends = _run_spends(bounds.icml_per_iteration, "zhang2018.icml_P", alpha, {"C": C}, B=data.B, V=V, eta=eta)
    return _history(Ls, dists, fc, solves, spends, sums, T=T, f_final=f, lambda_final=lam, step_seconds=seconds,
                    **{k: np.stack(v) for k, v in path.items()})


def conventional_admm(data: NodeData, A, *, C, rho, eta: float, T: int, f0, **kw) -> History:
    """Conventional decentralised ADMM, simplified form (ICML eqs. (8)-(9)): penalty = dual step = eta."""
    return m_admm(data, A, C=C, rho=rho, eta=np.full(T, float(eta)), theta=np.full(T, float(eta)), f0=f0, **kw)


# --------------------------------------------------------------------------------------------------- R-ADMM
@_one_blas_thread
def r_admm(data: NodeData, A, *, C, rho, eta, gamma, K: int, f0, theta=None, alpha=None, rngs=None,
           fc=None, tol: float = 1e-9, max_steps: int = 100, check_recycled: bool = False,
           independent_repeats: bool = False) -> History:
    """Recycled ADMM (Allerton Algorithm 1, eqs. (10)-(13)); with `alpha`, private R-ADMM (Algorithm 2, (27)-(29)).

    Iterations t = 1..2K alternate odd (2k-1: exact ADMM step with data) and even (2k: linearised step from stored
    quantities only). eta, gamma: scalars or per-iteration arrays of length 2K (R-ADMM + M-ADMM, Allerton Fig. 3:
    the odd step uses eta(2k-1), the even step eta(2k) and gamma(2k)). theta: dual step (default eta, as in
    conventional ADMM; Fig. 3 uses theta = 1 when eta varies). alpha: alpha_i(k), shape (K, N) or scalar.
    The gradient grad O(f_i(2k-1)) used at 2k is recycled from the KKT condition (15) of the odd step.
    Traces as m_admm's ('newton_steps' per odd iteration); meta 'odd_seconds', 'even_seconds' (K,): wall time of
    each odd update (local solves, recycled gradient, dual step) and of each even update (no data access).
    A private run records its Spend: per odd iteration 2k-1 the pure-DP budget
    (2C/B_i)(1.4 c_1 / (rho/N + 2 eta_i(2k-1) V_i) + alpha_i(k)) of Theorem IV.1 (30) (even iterations are
    post-processing, Lemma IV.1), bound 'zhang2018.allerton_P' (P(T)).
    Lanes of separate runs: C, rho and alpha per repeat as in m_admm.
    """
    A, f0 = _check_common(data, A, C, rho, f0)
    C, rho, per_lane = _lane_parameters(C, rho, independent_repeats)
    R, N, d = f0.shape
    T = 2 * K
    eta = _per_node(eta, T, N, "eta")
    gamma = _per_node(gamma, T, N, "gamma")
    theta = eta.copy() if theta is None else _per_node(theta, T, N, "theta")
    if np.any(gamma <= 0) or np.any(eta <= 0):
        raise ValueError("R-ADMM needs eta > 0 and gamma > 0")
    if np.any(theta > eta + 1e-12):
        raise ValueError("the dual step theta must not exceed the penalty eta (ICML Thm 3.1)")
    alpha = _lane_alphas(alpha, K, N, R)  # alpha_i(k), one per private (odd) iteration
    V = A.sum(1)
    lam = np.zeros_like(f0)
    f = f0.copy()
    L0, dist0, z = _traces(data, f, fc)
    Ls, dists, sums = [L0], [dist0], [dual_sum(lam)]
    solves, recycled_err = [], 0.0
    odd_s, even_s = np.empty(K), np.empty(K)
    for k in range(K):
        # ---- odd iteration 2k-1 (index 2k in 0-based t): conventional ADMM step, (12)/(27)-(28)
        start = time.perf_counter()
        e = eta[2 * k]
        kappa = _lane_kappa(rho, N, e, V)
        b = 2.0 * lam - e[:, None] * (V[:, None] * f + A @ f)
        eps = 0.0
        if alpha is not None:
            eps = _noise(rngs, d, alpha[:, k] if alpha.ndim == 3 else alpha[k], R, N)
            b = b + eps  # objective perturbation eps^T f (27)
        f_prev = f
        sol = solve_local(data, f, kappa, b, C, tol=tol, max_steps=max_steps, z_start=z,
                          problem=f"R-ADMM odd-step local problem (12)/(28) at t = {2 * k + 1}",
                          independent_repeats=independent_repeats)
        f = f_odd = sol.f
        solves.append(sol)
        # recycled gradient by the KKT condition (15): grad O = -(2 lam + eps) - eta sum_j (2 f_i - f_i(t-1) - f_j(t-1))
        gradO = -(2.0 * lam + eps) - e[:, None] * (2.0 * V[:, None] * f - V[:, None] * f_prev - A @ f_prev)
        lam = lam + 0.5 * theta[2 * k][:, None] * (V[:, None] * f - A @ f)  # (13)
        odd_s[k] = time.perf_counter() - start
        if check_recycled:
            direct = (C[:, None, None] * local_grad(data, f) + (rho[:, None, None] / N) * f if per_lane
                      else C * local_grad(data, f) + (rho / N) * f)
            recycled_err = max(recycled_err, float(np.abs(gradO - direct).max()))
        L, dist, z = _traces(data, f, fc)
        Ls.append(L)
        dists.append(dist)
        sums.append(dual_sum(lam))
        # ---- even iteration 2k: linearised step, no data access, (10)/(29); lambda(2k) = lambda(2k-1) (11)
        start = time.perf_counter()
        e2, g2 = eta[2 * k + 1], gamma[2 * k + 1]
        direction = gradO + 2.0 * lam + eps + e2[:, None] * (V[:, None] * f - A @ f)
        f = f - direction / (2.0 * e2 * V + g2)[:, None]
        even_s[k] = time.perf_counter() - start
        L, dist, z = _traces(data, f, fc)
        Ls.append(L)
        dists.append(dist)
        sums.append(dual_sum(lam))
    spends = _run_spends(bounds.allerton_per_release, "zhang2018.allerton_P", alpha, {"C": C, "rho": rho}, B=data.B,
                         V=V, eta=eta[0::2], T=T)
    return _history(Ls, dists, fc, solves, spends, sums, T=T, recycled_grad_max_err=recycled_err, f_final=f,
                    f_odd_final=f_odd, lambda_final=lam, odd_seconds=odd_s, even_seconds=even_s)
