"""Every inner solver stops on its tolerance or raises NotConvergedError (SPEC §0.5(3)): the ZKL damped Newton local
solver and centralised optimum, HUANG's exact local solves and centralised optima, the graphical lasso of XU's
feature graph. Small synthetic problems."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from repro_dpadmm.algorithms import centralized as ce
from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.algorithms import decentralized as dz
from repro_dpadmm.problems import fused_lasso as fl
from repro_dpadmm.rng import repeat_generators
from repro_dpadmm.solvers import NotConvergedError

from test_zhang2018_madmm import RING4, _problem


def _two_sided():
    """phi(f) = mean of L(f x) and L(-f x) over x in {1, 1/2} + 1e-3 f^2 / 2: minimiser f = 0, and its curvature
    vanishes away from 0, so a full Newton step from |f| >= 3 overshoots further every time."""
    X = np.array([[1.0], [1.0], [0.5], [0.5]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    return dz.node_data(X, y, [np.arange(4)])


@pytest.mark.parametrize("start", [3.0, 5.0])
def test_damped_newton_converges_where_plain_newton_does_not(start):
    data = _two_sided()
    args = (data, np.full((1, 1, 1), start), np.array([1e-3]), np.zeros((1, 1, 1)), 1.0)
    with pytest.raises(NotConvergedError, match="plain Newton"):
        dz.solve_local(*args, tol=1e-10, damped=False)
    sol = dz.solve_local(*args, tol=1e-10)
    assert abs(sol.f[0, 0, 0]) < 1e-10 and sol.damped.sum() >= 1 and sol.residual <= 1e-10


def test_zkl_local_solver_given_too_few_steps_raises():
    X, y, data = _problem()
    rng = np.random.default_rng(3)
    args = (data, rng.standard_normal((2, 4, 5)) * 5, np.array([0.3, 1.0, 2.0, 0.7]), rng.standard_normal((2, 4, 5)),
            5.0)
    with pytest.raises(NotConvergedError) as err:
        dz.solve_local(*args, tol=1e-12, max_steps=1, problem="node problem")
    assert "node problem" in str(err.value) and err.value.iteration == 1 and err.value.residual > 1e-12
    sol = dz.solve_local(*args, tol=1e-12)
    g = 5.0 * dz.local_grad(data, sol.f) + np.array([0.3, 1.0, 2.0, 0.7])[None, :, None] * sol.f + args[3]
    assert np.abs(g).max() < 1e-11 and sol.steps.shape == (2, 4) and sol.steps.max() < 20


def test_zkl_runs_raise_instead_of_continuing_from_half_solved_problems():
    X, y, data = _problem()
    f0 = np.random.default_rng(1).standard_normal((1, 4, 5)) * 10
    with pytest.raises(NotConvergedError, match="R-ADMM odd-step local problem"):
        dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=0.2, K=2, f0=f0, tol=1e-12, max_steps=1)
    with pytest.raises(NotConvergedError, match="M-ADMM local problem"):
        dz.conventional_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, T=2, f0=f0, tol=1e-12, max_steps=1)
    with pytest.raises(NotConvergedError, match="centralised optimum"):
        dz.centralized_optimum(data, 5.0, 1.0, max_steps=1)


def test_centralized_optimum_is_the_minimiser_of_objective_1():
    X, y, data = _problem()
    fc = dz.centralized_optimum(data, 5.0, 1.0)
    w = data.w  # 1/B_i per sample, in node order

    def obj(f):
        z = data.y * (dz.pooled(data).Xb @ f)
        return 5.0 * (w * np.logaddexp(0, -z)).sum() + 0.5 * f @ f

    ref = scipy.optimize.minimize(obj, np.zeros(5), method="BFGS", options={"gtol": 1e-12}).x
    assert np.abs(fc - ref).max() < 1e-6


def _local_problem_scipy(data, node, f_prev, lam, A, C, rho, eta, eps=None):
    """Allerton (12)/(27) for one node, minimised by scipy's trust-region Newton with exact derivatives."""
    N = A.shape[0]
    sel = np.flatnonzero(data.node == node)
    Xi = (dz.pooled(data).Xb[sel]).toarray()
    yi = data.y[sel]
    nbr = np.flatnonzero(A[node])
    mid = 0.5 * (f_prev[node] + f_prev[nbr])  # (V_i, d)
    lin = 2 * lam[node] + (0 if eps is None else eps[node])

    def fun(f):
        z = yi * (Xi @ f)
        s = 1 / (1 + np.exp(z))
        val = C * np.logaddexp(0, -z).mean() + rho / N * 0.5 * f @ f + lin @ f + eta * ((mid - f) ** 2).sum()
        grad = -C * (Xi * (yi * s)[:, None]).mean(0) + rho / N * f + lin + 2 * eta * (len(nbr) * f - mid.sum(0))
        return val, grad

    def hess(f):
        s = 1 / (1 + np.exp(yi * (Xi @ f)))
        return C * (Xi * (s * (1 - s))[:, None]).T @ Xi / len(yi) + (rho / N + 2 * eta * len(nbr)) * np.eye(Xi.shape[1])

    return scipy.optimize.minimize(fun, f_prev[node], jac=True, hess=hess, method="trust-exact",
                                   options={"gtol": 1e-13}).x


def test_radmm_odd_steps_match_a_direct_scipy_solve_of_each_local_problem():
    X, y, data = _problem()
    C, rho, eta = 5.0, 1.0, 0.5
    A = RING4
    f0 = np.random.default_rng(2).standard_normal((1, 4, 5)) * 3
    f_prev, lam = f0[0], np.zeros((4, 5))
    for K in (1, 2, 3):
        h = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=0.2, K=K, f0=f0, tol=1e-12)
        ref = np.stack([_local_problem_scipy(data, i, f_prev, lam, A, C, rho, eta) for i in range(4)])
        assert np.abs(h.meta["f_odd_final"][0] - ref).max() < 1e-8
        f_prev, lam = h.meta["f_final"][0], h.meta["lambda_final"][0]  # the state the next odd step starts from


def test_private_radmm_noise_follows_alpha():
    """The objective-perturbation noise eps recovered from the first odd step's KKT condition (15)/(49) has mean
    norm d/alpha (Gamma(d, 1/alpha) norms): ten times smaller at alpha = 20 than at alpha = 2."""
    X, y, data = _problem()
    C, rho, eta, R = 5.0, 1.0, 1.0, 200
    f0 = np.zeros((R, 4, 5))
    V = RING4.sum(1)
    mean_norm = {}
    for alpha in (2.0, 20.0):
        h = dz.r_admm(data, RING4, C=C, rho=rho, eta=eta, gamma=0.2, K=1, f0=f0, alpha=alpha,
                      rngs=repeat_generators(5, R, "noise"), tol=1e-12)
        f = h.meta["f_odd_final"]
        # 0 = grad O(f) + eps + 2 lambda(0) + eta sum_j (2 f - f_i(0) - f_j(0)), with lambda(0) = 0 and f(0) = 0
        eps = -(C * dz.local_grad(data, f) + rho / 4 * f + 2 * eta * V[None, :, None] * f)
        mean_norm[alpha] = np.linalg.norm(eps, axis=-1).mean()
        assert mean_norm[alpha] == pytest.approx(5 / alpha, rel=0.06)
    assert mean_norm[2.0] / mean_norm[20.0] == pytest.approx(10, rel=1e-6)  # same draws, scale 1/alpha


def test_huang_exact_local_solves_given_too_few_iterations_raise():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((60, 4))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    b = np.sign(rng.standard_normal(60))
    data = cs.star_data(A.reshape(1, 3, 20, 4), b.reshape(1, 3, 20))
    lin, center = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 4))
    with pytest.raises(NotConvergedError, match="l2 exact local solve"):
        cs.solve_local_l2(data, np.zeros((1, 3, 4)), lin, center, quad=0.01, rho=0.1, max_steps=1, tol=1e-12)
    with pytest.raises(NotConvergedError, match="l1 exact local solve"):
        cs.solve_local_l1(data, np.zeros((1, 3, 4)), lin, center, lam_n=0.05, rho=0.1, max_iter=3)
    w, steps, res = cs.solve_local_l2(data, np.zeros((1, 3, 4)), lin, center, quad=0.01, rho=0.1, tol=1e-10)
    assert res < 1e-10


def test_centralised_huang_optima_given_too_few_iterations_raise():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(X @ rng.standard_normal(6) + 0.5 * rng.standard_normal(200))
    with pytest.raises(NotConvergedError, match="centralised l2 optimum"):
        ce.solve(X, y, "l2", 1e-3, max_steps=1)
    with pytest.raises(NotConvergedError, match="centralised l1 optimum"):
        ce.solve(X, y, "l1", 1e-3, max_outer=1, tol=1e-30)
    with pytest.raises(NotConvergedError, match="L-BFGS-B"):
        ce.solve(X, y, "l1", 1e-3, method="lbfgsb", max_iter=2)


def test_graphical_lasso_that_does_not_converge_is_not_used():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 8)) @ rng.standard_normal((8, 8))
    cov = np.corrcoef(X, rowvar=False)
    with pytest.raises(NotConvergedError, match="graphical lasso"):
        fl._glasso_edges(cov, 0.01, tol=1e-12, max_iter=1)
    with pytest.raises(ValueError, match="not converged"):
        fl.estimate_graph(X, alphas=(0.01,), min_edges=1, tol=1e-12, max_iter=1)
