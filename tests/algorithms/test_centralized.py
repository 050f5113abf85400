"""algorithms.centralized: the non-private centralised optimum (HUANG baseline (1), docs/choices.md#huang-centralised) against
independent solves of the same objective."""

from __future__ import annotations

import numpy as np
import scipy.optimize

from repro_dpadmm.algorithms import centralized as ce

from _huang_synth import objective_grad, star_problem


def test_l2_optimum_has_zero_gradient():
    A, b, _ = star_problem(n=4, m=40, d=5)
    w_star = ce.solve(A[0].reshape(-1, 5), b[0].reshape(-1), "l2", 0.01)
    assert np.linalg.norm(objective_grad(A[0], b[0], 0.01, w_star)) < 1e-8


def test_l1_optimum_against_scipy_and_both_methods():
    A, b, _ = star_problem(n=3, m=40, d=5, seed=4)
    lam_n = 0.02
    Xall, yall = A[0].reshape(-1, 5), b[0].reshape(-1)
    w_star = ce.solve(Xall, yall, "l1", lam_n)
    # against a direct derivative-free solve of the same objective
    ref = scipy.optimize.minimize(lambda w: ce.objective(Xall, yall, w, "l1", lam_n), w_star + 0.1,
                                  method="Powell", options={"xtol": 1e-10, "ftol": 1e-14, "maxiter": 100_000})
    assert ce.objective(Xall, yall, w_star, "l1", lam_n) <= ref.fun + 1e-9
    # proximal Newton (default) and plain L-BFGS-B on w = u - v (docs/choices.md#huang-centralised) reach the same optimum
    w_plain = ce.solve(Xall, yall, "l1", lam_n, method="lbfgsb")
    assert abs(ce.objective(Xall, yall, w_plain, "l1", lam_n) - ce.objective(Xall, yall, w_star, "l1", lam_n)) < 1e-12
    assert np.abs(w_plain - w_star).max() < 1e-5
