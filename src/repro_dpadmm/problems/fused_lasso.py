"""Graph-guided fused lasso for logistic regression (XU eq. (11); docs/choices.md#xu-problem, docs/choices.md#xu-graph).

    min_x (1/n) sum_i log(1 + exp(-m_i l_i^T x)) + lambda ||y||_1   s.t.  A x - y = 0,   A = [W; I],

where W is the sparsity pattern of a graph over the features obtained by sparse inverse covariance selection
(graphical lasso, Friedman et al. 2008 as in XU's ref. [47]). The paper gives neither the graphical-lasso penalty nor
the form of W; docs/choices.md#xu-graph [D]: standardise the training features, pick the penalty alpha_g from a fixed list (the
largest value giving at least d edges, capped at 5 d edges), and let W be the edge-incidence matrix (row e = (i, j)
is +1 at column i and -1 at column j), so lambda ||A x||_1 = lambda (sum_E |x_i - x_j| + ||x||_1).

Shapes: samples `X` (n, d), labels `y` (n,) in {-1, +1}, iterates `x` (..., d) with any leading (repeat) axes.
Nothing is cached on disk; `estimate_graph` reports its own wall time so callers can show it apart.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..solvers import NotConvergedError
from . import logistic, regularizers

ALPHA_GRID = (0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01)  # docs/choices.md#xu-graph [D]
EDGE_TOL = 1e-8  # |Theta_ij| above this is an edge (docs/choices.md#xu-graph [D])


ETA_RULES = ("paper", "conservative")


def step_size(L_f: float, norm_AtA: float, rule: str, rho: float) -> float:
    """XU's step size eta for a problem with Lipschitz constant `L_f` and ||A^T A||_2 = `norm_AtA` (docs/choices.md#xu-step-size).

    "paper": eta = 1/L_f, the largest step Lemma 5 allows (0 <= eta <= 1/L_f; Algorithm 1 asks eta < 1/L_F) with
    the paper's gamma = 1 (§V-B). "conservative": eta = 1/(L_f + rho ||A^T A||_2), the old default, which is what
    G = gamma I - eta rho A^T A >= 0 needs with gamma = 1 (the paper's own gamma_min cannot hold at gamma = 1).
    """
    if rule == "paper":
        return 1.0 / L_f
    if rule == "conservative":
        return 1.0 / (L_f + rho * norm_AtA)
    raise ValueError(f"eta_rule must be one of {ETA_RULES}, got {rule!r}")


SPARSE_BELOW = 0.25  # store X as CSR when its density is below this (a9a, a8a: ~11 %): 3x faster products


def normalise_rows(X: np.ndarray) -> np.ndarray:
    """x <- x / max(1, ||x||): every sample has norm <= 1, so the per-sample gradient bound is c = 1 (docs/choices.md#xu-gradient-bound [D])."""
    X = np.asarray(X, dtype=np.float64)
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]


def as_compute_matrix(X: np.ndarray):
    """X itself, or its CSR form when it is sparse enough for sparse products to be faster."""
    density = np.count_nonzero(X) / max(X.size, 1)
    return sp.csr_matrix(X) if density < SPARSE_BELOW else np.ascontiguousarray(X)


@dataclass(frozen=True)
class Graph:
    """A feature graph: `edges` (|E|, 2) with i < j, the penalty `alpha` that produced it and how long it took."""

    edges: np.ndarray
    d: int
    alpha: float
    seconds: float
    tried: dict = field(default_factory=dict)  # alpha -> number of edges (or an error message)
    capped_from: int | None = None  # number of edges before the 5 d cap, if it applied

    @property
    def n_edges(self) -> int:
        return int(len(self.edges))


def _glasso_edges(cov: np.ndarray, alpha: float, tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges (i < j) and their |Theta_ij| from sklearn's graphical lasso on a correlation matrix.

    sklearn returns its last iterate with a ConvergenceWarning when it stops at max_iter; that iterate is never used:
    the warning becomes NotConvergedError (the caller then tries the next alpha, as for sklearn's FloatingPointError).
    """
    from sklearn.covariance import graphical_lasso
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            _, theta = graphical_lasso(cov, alpha=alpha, max_iter=max_iter, tol=tol)
        except ConvergenceWarning as exc:
            raise NotConvergedError(f"graphical lasso at alpha = {alpha}", max_iter, float("nan"), tol,
                                    hint=str(exc).splitlines()[0]) from None
    i, j = np.triu_indices(cov.shape[0], k=1)
    strength = np.abs(theta[i, j])
    keep = strength > EDGE_TOL
    return np.stack([i[keep], j[keep]], axis=1), strength[keep]


def edge_bound(cov: np.ndarray, alpha: float) -> int:
    """The most edges the graphical lasso's solution at `alpha` can have: sum over the connected components of the
    thresholded graph |S_ij| > alpha of size (size - 1) / 2.

    Exact screening (Witten, Friedman and Simon 2011; Mazumder and Hastie 2012): the solution's concentration graph
    splits into exactly the connected components of that thresholded graph, so it has no edge between two of them.
    """
    adj = np.abs(cov) > alpha
    np.fill_diagonal(adj, False)
    _, labels = connected_components(sp.csr_matrix(adj), directed=False)
    sizes = np.bincount(labels)
    return int((sizes * (sizes - 1) // 2).sum())


def estimate_graph(X: np.ndarray, alphas=ALPHA_GRID, min_edges: int | None = None,
                   max_edges: int | None = None, tol: float = 1e-4, max_iter: int = 200) -> Graph:
    """Sparse inverse covariance selection over the features of `X` (docs/choices.md#xu-graph steps 1-3, [D]).

    Standardises the columns (zero-variance columns take no part in the graph), then runs
    `sklearn.covariance.graphical_lasso` on the correlation matrix for each alpha in `alphas` (largest first) and
    takes the first that gives at least `min_edges` (default d) edges. Above `max_edges` (default 5 d) only the
    `max_edges` strongest edges (largest |Theta_ij|) are kept. If no alpha reaches `min_edges`, the alpha with the
    most edges is used. An alpha at which sklearn does not converge (or fails) is skipped and recorded in `tried`. A
    graph with no edge at all is an error: the fused part of the penalty would vanish.
    `tol` and `max_iter` go to sklearn's solver (its defaults); a looser tol is much faster at small alphas.

    An alpha whose solution cannot have `min_edges` edges (`edge_bound`, exact screening) is not solved while looking
    for the first alpha that reaches `min_edges` (the same choice, without the solve: on a9a sklearn spends 1,000
    iterations failing to converge at alpha = 0.5, whose solution has at most 37 edges); only if no alpha reaches
    `min_edges` are they solved, for the alpha with the most edges.
    """
    t0 = time.perf_counter()
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    min_edges = d if min_edges is None else int(min_edges)
    max_edges = 5 * d if max_edges is None else int(max_edges)
    if max_edges < 1 or min_edges > max_edges:
        raise ValueError(f"need 1 <= max_edges and min_edges <= max_edges, got {min_edges}, {max_edges}")
    std = X.std(axis=0)
    cols = np.flatnonzero(std > 1e-12)
    if len(cols) < 2:
        raise ValueError(f"graph estimation needs at least 2 features with non-zero variance, got {len(cols)}")
    Z = (X[:, cols] - X[:, cols].mean(axis=0)) / std[cols]
    cov = (Z.T @ Z) / n
    tried: dict = {}
    solved: dict = {}

    def solve(alpha):
        """(edges, strength) at alpha, or None when sklearn fails or does not converge (recorded in `tried`)."""
        if alpha not in solved:
            try:
                solved[alpha] = _glasso_edges(cov, alpha, tol, max_iter)
                tried[float(alpha)] = int(len(solved[alpha][0]))
            except (FloatingPointError, NotConvergedError) as exc:  # ill-conditioned or not converged at this alpha
                solved[alpha] = None
                tried[float(alpha)] = f"failed: {exc}"
        return solved[alpha]

    order = sorted(alphas, reverse=True)
    best = None
    for alpha in order:
        bound = edge_bound(cov, alpha)
        if bound < min_edges:
            tried[float(alpha)] = f"not solved: at most {bound} edges (screening), fewer than {min_edges}"
            continue
        r = solve(alpha)
        if r is not None and len(r[0]) >= min_edges:
            best = (alpha, *r)
            break
    if best is None:  # no alpha reaches min_edges: the alpha with the most edges (the first of equals), all solved
        for alpha in order:
            r = solve(alpha)
            if r is not None and (best is None or len(r[0]) > len(best[1])):
                best = (alpha, *r)
    if best is None or len(best[1]) == 0:
        raise ValueError(f"graphical lasso found no edge between features for any alpha in {sorted(alphas)} "
                         f"(edges per alpha: {tried}); try smaller alphas or check the features")
    alpha, edges, strength = best
    capped_from = None
    if len(edges) > max_edges:
        capped_from = int(len(edges))
        keep = np.sort(np.argsort(-strength, kind="stable")[:max_edges])
        edges = edges[keep]
    edges = cols[edges]  # back to the original column numbers
    return Graph(edges=edges, d=d, alpha=float(alpha), seconds=time.perf_counter() - t0, tried=tried,
                 capped_from=capped_from)


def incidence(edges: np.ndarray, d: int) -> sp.csr_matrix:
    """W in R^{|E| x d}: row e = (i, j) is +1 at column i and -1 at column j (docs/choices.md#xu-graph step 4)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) == 0:
        raise ValueError("the feature graph has no edges: W would be empty and the problem a plain lasso; "
                         "estimate the graph with a smaller graphical-lasso alpha")
    if edges.min() < 0 or edges.max() >= d or np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("edges must be pairs of distinct feature indices in [0, d)")
    m = len(edges)
    rows = np.repeat(np.arange(m), 2)
    vals = np.tile([1.0, -1.0], m)
    return sp.csr_matrix((vals, (rows, edges.ravel())), shape=(m, d))


def constraint_matrix(W: sp.spmatrix) -> sp.csr_matrix:
    """A = [W; I] (docs/choices.md#xu-graph step 5)."""
    return sp.vstack([W, sp.identity(W.shape[1], format="csr")], format="csr")


@dataclass(frozen=True)
class FusedLasso(logistic.MeanLogisticTerm):
    """One instance of problem (11): data, constraint matrix A = [W; I] and the l1 weight lambda."""

    X: np.ndarray  # (n, d) training samples, rows of norm <= 1 (ndarray or scipy CSR)
    y: np.ndarray  # (n,) labels in {-1, +1}
    A: sp.csr_matrix  # (|E| + d, d)
    lam: float

    def __post_init__(self):
        self._check_data()
        if self.A.shape[1] != self.d:
            raise ValueError(f"A must have {self.d} columns, got {self.A.shape}")

    @property
    def AtA(self) -> np.ndarray:
        """A^T A = W^T W + I (dense d x d: d <= 123 here)."""
        return (self.A.T @ self.A).toarray()

    @property
    def norm_AtA(self) -> float:
        """||A^T A||_2."""
        return float(np.linalg.eigvalsh(self.AtA)[-1])

    def step_size(self, rule: str, rho: float) -> float:
        """eta by `rule` (docs/choices.md#xu-step-size): "paper" = 1/L_f, the bound of XU's Lemma 5 (0 <= eta <= 1/L_f) with its
        gamma = 1; "conservative" = 1/(L_f + rho ||A^T A||_2), what G = gamma I - eta rho A^T A >= 0 needs."""
        return step_size(self.L_f, self.norm_AtA, rule, rho)

    def default_eta(self, rho: float) -> float:
        """The default step, eta = 1/L_f (docs/choices.md#xu-step-size); `rho` is unused by this rule."""
        return self.step_size("paper", rho)

    def prox_g(self, v: np.ndarray, rho: float) -> np.ndarray:
        """argmin_y lambda ||y||_1 + (rho/2)||v - y||^2: the soft-threshold at lambda/rho (the y-update (3))."""
        return regularizers.prox_l1(v, self.lam / rho)

    def penalty(self, x: np.ndarray) -> np.ndarray:
        """lambda ||A x||_1 for x of shape (..., d)."""
        x = np.asarray(x)
        Ax = (self.A @ x.reshape(-1, self.d).T).T
        return (self.lam * np.abs(Ax).sum(axis=1)).reshape(x.shape[:-1])

    def objective(self, x: np.ndarray, chunk: int = 64) -> np.ndarray:
        """F(x) = f(x) + lambda ||A x||_1 (docs/choices.md#xu-objective [D]), for x of shape (..., d)."""
        return self.loss(x, chunk) + self.penalty(x)


def accuracy(X: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Fraction of samples with sign(l_i^T x) = m_i (a tie counts as -1, docs/choices.md#numerical-conventions), for x of shape (..., d)."""
    x = np.asarray(x)
    xs = x.reshape(-1, X.shape[1])
    pred = np.where(np.asarray(X @ xs.T) > 0, 1.0, -1.0)
    return (pred == y[:, None]).mean(axis=0).reshape(x.shape[:-1])


def build(X_train: np.ndarray, y_train: np.ndarray, lam: float, graph: Graph | None = None,
          **graph_options) -> tuple[FusedLasso, Graph]:
    """Normalise the rows, estimate the feature graph (unless given) and assemble problem (11)."""
    X = normalise_rows(X_train)
    y = np.asarray(y_train, dtype=np.float64)
    if not set(np.unique(y).tolist()) <= {-1.0, 1.0}:
        raise ValueError("labels must be -1 or +1")
    if graph is None:
        graph = estimate_graph(X, **graph_options)
    A = constraint_matrix(incidence(graph.edges, X.shape[1]))
    return FusedLasso(X=as_compute_matrix(X), y=y, A=A, lam=float(lam)), graph


def resolve_step_size(params: dict, name: str, problem) -> tuple[float, str]:
    """eta for one dataset and how it was set: `eta` is "auto" (the rule `eta_rule`: "paper" = 1/L_f, the default
    of docs/choices.md#xu-step-size; "conservative" = 1/(L_f + rho ||A^T A||_2)), a positive number, or a mapping dataset -> either.
    `problem` is any problem with `step_size(rule, rho)` (FusedLasso, L2Logistic)."""
    eta = params.get("eta", "auto")
    if isinstance(eta, dict):
        eta = eta.get(name, "auto")
    rule = params.get("eta_rule", "paper")
    if rule not in ETA_RULES:
        raise ValueError(f"eta_rule must be one of {ETA_RULES}, got {rule!r}")
    if eta == "auto":
        return problem.step_size(rule, params.get("rho", 1.0)), rule
    if not (isinstance(eta, (int, float)) and not isinstance(eta, bool) and eta > 0):
        raise ValueError(f"eta must be 'auto', a positive number or a mapping dataset -> either, got {eta!r}")
    return float(eta), "config"
