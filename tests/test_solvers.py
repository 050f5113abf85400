"""The solver rule (docs/choices.md#solvers-converge): require_converged, and inner solvers that stop on their tolerance or raise
NotConvergedError (HUANG's exact local solves and centralised optima, XU's graphical lasso; the ZKL local solver's
are in tests/algorithms/test_decentralized.py)."""

import numpy as np
import pytest

from repro_dpadmm.algorithms import centralized as ce
from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.problems import fused_lasso as fl
from repro_dpadmm.solvers import NotConvergedError, require_converged


def test_require_converged_passes_within_tolerance():
    require_converged("toy", 3, np.array([1e-9, 5e-9]), 1e-8)


def test_require_converged_names_problem_iteration_and_worst_residual():
    with pytest.raises(NotConvergedError) as err:
        require_converged("local problem of node 3", 50, np.array([1e-9, 2.5e-3]), 1e-8)
    assert err.value.iteration == 50 and err.value.residual == pytest.approx(2.5e-3)
    assert "local problem of node 3" in str(err.value) and "2.500e-03" in str(err.value)


def test_nan_residual_is_not_converged():
    with pytest.raises(NotConvergedError):
        require_converged("toy", 1, np.array([np.nan, 0.0]), 1.0)


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
