"""The non-private centralised optimum (baseline (1) of Huang et al. 2019, docs/choices.md#huang-centralised).

min_w (1/N) sum_j l(a_j, b_j, w) + mu R(w) on all N training samples, mu = lambda/n (= 1e-6): the same minimiser as
problem (1) with equal m_i. Solved to high precision:

* l2 (R = ||w||^2/2): Newton's method with the exact Hessian and a backtracking line search.
* l1 (R = ||w||_1): L-BFGS-B on the split w = u - v, u, v >= 0 (scipy), objective mean loss + mu sum(u + v)
  (docs/choices.md#huang-centralised), started at the l2 optimum; by default inside a proximal Newton loop. At mu = 1e-6 the l1 problem is
  nearly unregularised and ill-conditioned (columns seen in a single training row have curvature ~1e-8): plain
  L-BFGS-B needs ~1,600 data passes per data set; proximal Newton (exact Hessian; its l1 subproblem solved by the same
  L-BFGS-B on 104 x 104 products) needs ~3 Hessians and ~10 passes. Orthant-wise and smoothed-|w| Newton variants
  stalled on the flat coordinates.

API
---
``solve(X, y, reg, mu, method=)`` for one data set (X dense or sparse (N, d), y in {-1, +1}); ``objective(X, y, w, reg, mu)``;
``star_optimum(data, reg, lam_n)`` solves each repeat's training set of a ``consensus.StarData`` (one reference solve
per repeat; a Python loop over the repeats, not over agents or samples) -> (R, d).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from scipy.special import expit
from threadpoolctl import threadpool_limits

from ..kernels import gram
from ..problems import regularizers
from ..problems.logistic import loss
from ..solvers import NotConvergedError, require_converged


def _mat(X):
    return X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=float)


def _hessian(X, c):
    """X^T diag(c) X as a dense (d, d) array (sparse product for sparse X: Adult rows have 12 non-zeros)."""
    if sp.issparse(X) and X.format == "csr" and X.has_sorted_indices:
        return gram.weighted_gram(X, c)  # compiled, scipy's sums (kernels/gram.py)
    if sp.issparse(X):
        return gram.weighted_gram_reference(X, c)
    return X.T @ (X * c[:, None])


def objective(X, y, w, reg: str, mu: float) -> float:
    """(1/N) sum_j ln(1 + exp(-b_j w^T a_j)) + mu R(w)."""
    X = _mat(X)
    return float(loss(y * (X @ w)).mean() + mu * regularizers.value(reg, w))


def newton_l2(X, y, mu: float, *, tol: float = 1e-10, max_steps: int = 100, w0=None) -> np.ndarray:
    """argmin (1/N) sum l + (mu/2)||w||^2 by Newton's method (exact Hessian, backtracking), until ||grad|| < tol."""
    X = _mat(X)
    N, d = X.shape
    w = np.zeros(d) if w0 is None else np.asarray(w0, dtype=float).copy()

    def f(v):
        return loss(y * (X @ v)).mean() + 0.5 * mu * v @ v

    fw = f(w)
    for _ in range(max_steps):
        z = y * (X @ w)
        s = expit(-z)
        g = X.T @ (-y * s) / N + mu * w
        if np.linalg.norm(g) < tol:
            return w
        H = _hessian(X, s * (1 - s) / N) + mu * np.eye(d)
        p = np.linalg.solve(H, g)
        t = 1.0
        while True:
            w_new = w - t * p
            f_new = f(w_new)
            if f_new <= fw - 1e-4 * t * g @ p or t < 1e-10:
                break
            t *= 0.5
        w, fw = w_new, f_new
    z = y * (X @ w)
    g = X.T @ (-y * expit(-z)) / N + mu * w
    require_converged("centralised l2 optimum (Newton)", max_steps, np.linalg.norm(g), tol)
    return w


def lbfgsb_l1(X, y, mu: float, *, tol: float = 1e-10, max_iter: int = 50_000, w0=None) -> np.ndarray:
    """argmin (1/N) sum l + mu ||w||_1 by L-BFGS-B on w = u - v, u, v >= 0 (docs/choices.md#huang-centralised), from w0 (default: the l2
    optimum), until the relative decrease reaches machine precision or the projected gradient is < tol."""
    X = _mat(X)
    N, d = X.shape
    w0 = newton_l2(X, y, mu, tol=1e-8) if w0 is None else np.asarray(w0, dtype=float)

    XT = X.T.tocsr() if sp.issparse(X) else X.T

    def fg(uv):
        w = uv[:d] - uv[d:]
        z = y * (X @ w)
        e = np.exp(-np.abs(z))  # one exp for both the loss and sigma(-z)
        s = np.where(z >= 0, e / (1 + e), 1 / (1 + e))
        g = XT @ (-y * s) / N
        return (np.log1p(e) + np.maximum(-z, 0)).mean() + mu * uv.sum(), np.concatenate([g + mu, -g + mu])

    return _lbfgsb_split(fg, w0, tol, max_iter)


def _lbfgsb_split(fg, w0, tol, max_iter, strict=True):
    d = w0.size
    res = scipy.optimize.minimize(fg, np.concatenate([np.maximum(w0, 0), np.maximum(-w0, 0)]), jac=True,
                                  method="L-BFGS-B", bounds=[(0, None)] * (2 * d),
                                  options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 1e-16,
                                           "gtol": tol, "maxcor": 30})
    if strict and not res.success:
        x, g = res.x, res.jac
        pg = np.where(x > 0, g, np.minimum(g, 0.0))  # projected gradient on the bounds u, v >= 0
        raise NotConvergedError("centralised l1 optimum (L-BFGS-B)", res.nit, float(np.abs(pg).max()), tol,
                                hint=str(res.message))
    return res.x[:d] - res.x[d:]


def prox_newton_l1(X, y, mu: float, *, tol: float = 1e-13, max_outer: int = 50, w0=None) -> np.ndarray:
    """argmin (1/N) sum l + mu ||w||_1 by proximal Newton: at w, minimise the quadratic model of the loss (exact
    Hessian) + mu ||.||_1 by L-BFGS-B on the split z = u - v (104 x 104 products only, no data access), then an
    Armijo step on the true objective; stop when the model predicts a decrease below tol. Converges in ~3 outer
    steps on Adult (to the same optimum as plain L-BFGS-B, ~1e-14 in objective) at a fraction of the data passes."""
    X = _mat(X)
    N, d = X.shape
    w = newton_l2(X, y, mu, tol=1e-8) if w0 is None else np.asarray(w0, dtype=float).copy()
    XT = X.T.tocsr() if sp.issparse(X) else X.T

    def F(v):
        return loss(y * (X @ v)).mean() + mu * np.abs(v).sum()

    Fw = F(w)
    for _ in range(max_outer):
        s = expit(-y * (X @ w))
        g = XT @ (-y * s) / N
        H = _hessian(X, s * (1 - s) / N)
        c = g - H @ w

        def model(uv, H=H, c=c):
            z = uv[:d] - uv[d:]
            Hz = H @ z
            return c @ z + 0.5 * z @ Hz + mu * uv.sum(), np.concatenate([c + Hz + mu, -(c + Hz) + mu])

        # the model is minimised to machine precision; an "ABNORMAL" line-search stop there is fine, the outer
        # Armijo step and stopping rule judge the result
        z = _lbfgsb_split(model, w, 1e-14, 100_000, strict=False)
        step = z - w
        decrease = g @ step + mu * (np.abs(z).sum() - np.abs(w).sum())  # the model's predicted change (<= 0)
        if decrease > -tol:
            return w
        t = 1.0
        while True:
            w_new = w + t * step
            F_new = F(w_new)
            if F_new <= Fw + 1e-4 * t * decrease or t < 1e-10:
                break
            t *= 0.5
        w, Fw = w_new, F_new
    raise NotConvergedError("centralised l1 optimum (proximal Newton)", max_outer, -decrease, tol,
                            hint="model decrease predicted at the last step")


def solve(X, y, reg: str, mu: float, *, method: str = "prox_newton", **kw) -> np.ndarray:
    """The centralised optimum for reg 'l2' (Newton) or 'l1' (method 'prox_newton' [default] or 'lbfgsb': plain
    L-BFGS-B on w = u - v, docs/choices.md#huang-centralised)."""
    if not mu >= 0:
        raise ValueError(f"the regularisation weight must be >= 0, got {mu}")
    y = np.asarray(y, dtype=float)
    # One BLAS thread: the 104 x 104 solves and L-BFGS-B's small vector operations are far slower with OpenBLAS
    # threads (17 ms instead of 1.4 ms per L-BFGS-B iteration on a busy 2-core machine).
    with threadpool_limits(1):
        if regularizers.check(reg) == "l2":
            return newton_l2(X, y, mu, **kw)
        if method == "prox_newton":
            return prox_newton_l1(X, y, mu, **kw)
        if method == "lbfgsb":
            return lbfgsb_l1(X, y, mu, **kw)
        raise ValueError(f"method must be 'prox_newton' or 'lbfgsb', got {method!r}")


def star_optimum(data, reg: str, lam_n: float, **kw) -> np.ndarray:
    """The centralised optimum on each data draw of a consensus.StarData (all n m training samples): (D, d)."""
    Xs, y = data.training_rows()
    rows = y.shape[1]
    return np.stack([solve(Xs[r * rows:(r + 1) * rows], y[r], reg, lam_n, **kw) for r in range(data.D)])
