"""problems.logistic: the batched logistic loss, its gradient and Hessian (against finite differences), the error rate
and the mean logistic term shared by XU's problems (dense and sparse data alike)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from repro_dpadmm.problems import logistic
from repro_dpadmm.problems.l2_logistic import L2Logistic


def test_loss_is_stable_and_sigmoid_is_its_negative_slope():
    z = np.array([-800.0, -5.0, 0.0, 5.0, 800.0])
    np.testing.assert_allclose(logistic.loss(z), [800.0, np.log1p(np.exp(5.0)), np.log(2.0), np.log1p(np.exp(-5.0)),
                                                  0.0], rtol=1e-12, atol=1e-300)
    h = 1e-6
    np.testing.assert_allclose((logistic.loss(z[1:4] + h) - logistic.loss(z[1:4] - h)) / (2 * h),
                               -logistic.sigmoid_neg(z[1:4]), rtol=1e-6)


def test_batched_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(0)
    A, b = rng.normal(size=(3, 20, 4)), np.where(rng.random((3, 20)) > 0.5, 1.0, -1.0)   # 3 agents
    w = rng.normal(size=(2, 3, 4))                                                          # 2 repeats
    g, H = logistic.mean_grad(A, b, w), logistic.mean_hessian(A, b, w)
    assert g.shape == (2, 3, 4) and H.shape == (2, 3, 4, 4) and logistic.mean_loss(A, b, w).shape == (2, 3)
    h = 1e-6
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        fd = (logistic.mean_loss(A, b, w + e) - logistic.mean_loss(A, b, w - e)) / (2 * h)
        np.testing.assert_allclose(g[..., k], fd, rtol=1e-5, atol=1e-9)
        fd2 = (logistic.mean_grad(A, b, w + e) - logistic.mean_grad(A, b, w - e)) / (2 * h)
        np.testing.assert_allclose(H[..., k], fd2, rtol=1e-5, atol=1e-9)
    # a tie w^T a = 0 counts as -1
    assert logistic.error_rate(np.ones((1, 2)), np.array([-1.0]), np.zeros(2)) == 0.0


@pytest.mark.parametrize("sparse", [False, True])
def test_mean_logistic_term_on_dense_and_sparse_rows(sparse):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 5)) * (rng.random((30, 5)) < 0.5)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(rng.random(30) > 0.5, 1.0, -1.0)
    p = L2Logistic(X=sp.csr_matrix(X) if sparse else X, y=y, lam=0.1)
    x = rng.normal(size=(2, 5))
    np.testing.assert_allclose(p.grad(x), logistic.mean_grad(X, y, x), rtol=1e-12)
    np.testing.assert_allclose(p.loss(x), logistic.mean_loss(X, y, x), rtol=1e-12)
    sq = (X ** 2).sum(1).max()
    assert p.L_f == pytest.approx(0.25 * sq) and p.gradient_bound == pytest.approx(np.sqrt(sq))
    with pytest.raises(ValueError, match="y must have shape"):
        L2Logistic(X=X, y=y[:-1], lam=0.1)
