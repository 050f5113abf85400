"""The compiled gradient sweep of XU's logistic term equals scipy's products and expit bit for bit (same formula, same C
library exp, same order of the sums), and MeanLogisticTerm's grad and loss equal the formulas they replaced: bit for
bit on sparse rows, to round-off where numpy's vectorised exp and log1p take over (dense rows, the loss) and where dense
rows are summed in blocks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from repro_dpadmm.kernels import logistic_term as k
from repro_dpadmm.problems import fused_lasso as fl
from repro_dpadmm.problems import logistic
from repro_dpadmm.problems.l2_logistic import L2Logistic

SPECIAL = [0.0, -0.0, 1e-300, -1e-300, 1e-8, -1e-8, 36.0, -36.0, 700.0, -700.0, 800.0, -800.0, np.inf, -np.inf]


def _values(rng, n=20000):
    z = np.concatenate([rng.standard_normal(n) * 30, rng.standard_normal(n) * 1e-3, SPECIAL])
    return z


def _csr(rng, n, d, density, unsorted=False):
    dense = np.where(rng.random((n, d)) < density, rng.standard_normal((n, d)), 0.0)
    dense[5] = 0.0                                    # an empty row
    X = sp.csr_matrix(dense)
    X.data[::7] = 0.0                                 # explicit zeros stay in the sums, as in scipy's
    if unsorted:                                      # a row's entries in another stored order: same order for both
        for i in range(n):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            X.indices[lo:hi] = X.indices[lo:hi][::-1].copy()
            X.data[lo:hi] = X.data[lo:hi][::-1].copy()
        X.has_sorted_indices = False
    return X


@pytest.mark.parametrize("R", [1, 2, 7, k.FUSE_MIN_RUNS, 40])
@pytest.mark.parametrize("unsorted", [False, True])
def test_csr_grad_sum_equals_scipy_bit_for_bit(R, unsorted):
    rng = np.random.default_rng(R)
    Xm = _csr(rng, 600, 30, 0.2, unsorted)
    x = rng.standard_normal((30, R)) * 3
    ref = k.csr_grad_sum_reference(Xm, x)
    got = k.csr_grad_sum(Xm, x)
    assert got.shape == (30, R)
    assert np.array_equal(got, ref)
    assert np.array_equal(k.csr_grad_sum(Xm, np.asfortranarray(x)), ref)     # any memory layout of x
    # each run's column is the same whichever runs share the batch
    assert np.array_equal(k.csr_grad_sum(Xm, x[:, :1]), ref[:, :1])


def _old_grad(p, x):
    s = expit(-np.asarray(p.Xm @ x.reshape(-1, p.d).T))
    return (-(s.T @ p.Xm) / p.n).reshape(x.shape)


def _old_loss(p, x, chunk=64):
    xs = x.reshape(-1, p.d)
    out = np.empty(len(xs))
    for j in range(0, len(xs), chunk):
        out[j:j + chunk] = np.logaddexp(0.0, -(np.asarray(p.X @ xs[j:j + chunk].T) * p.y[:, None])).mean(axis=0)
    return out.reshape(x.shape[:-1])


def _one_product_loss(p, x):
    z = np.asarray(p.X @ x.reshape(-1, p.d).T) * p.y[:, None]
    m = np.maximum(-z, 0.0)
    return (np.log1p(np.exp(-np.abs(z))) + m).mean(axis=0)


@pytest.mark.parametrize("sparse,blocked", [(False, False), (False, True), (True, False)])
def test_problem_grad_and_loss_equal_the_numpy_formulas(sparse, blocked, monkeypatch):
    if blocked:  # dense rows in blocks of 64 (the least): 500 rows are 7 whole blocks and one of 52
        monkeypatch.setattr(logistic, "ROW_BLOCK_BYTES", 1)
        monkeypatch.setattr(logistic, "BLOCKED_ABOVE_BYTES", 0)
    rng = np.random.default_rng(5)
    X = fl.normalise_rows(np.where(rng.random((500, 12)) < (0.1 if sparse else 0.9), rng.standard_normal((500, 12)),
                                   0.0))
    y = np.where(rng.random(500) < 0.4, 1.0, -1.0)
    Xc = fl.as_compute_matrix(X)
    assert sp.issparse(Xc) == sparse
    p = L2Logistic(X=Xc, y=y, lam=1e-3)
    # sparse rows: the compiled sweep, bit for bit; dense rows and the loss: numpy's vectorised exp and log1p, which
    # differ from the C library's by an ulp in a few per cent of elements
    # (the blocks' sums in another order than one product's: round-off too)
    same = np.array_equal if sparse else (lambda a, b: np.allclose(a, b, rtol=1e-14, atol=1e-16))
    if not blocked:  # dense rows below BLOCKED_ABOVE_BYTES: one block, the one product's numbers bit for bit
        x = rng.standard_normal((3, 12))
        assert np.array_equal(p.loss(x), _one_product_loss(p, x))
    for shape in [(12,), (1, 12), (3, 12), (2, 20, 12), (70, 12)]:
        x = rng.standard_normal(shape)
        assert same(p.grad(x), _old_grad(p, x))
        assert np.allclose(p.loss(x), _old_loss(p, x), rtol=1e-14, atol=0)
    x = rng.standard_normal((130, 12))
    assert np.allclose(p.loss(x, chunk=64), _old_loss(p, x, 64), rtol=1e-14, atol=0)
