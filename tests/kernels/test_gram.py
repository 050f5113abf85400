"""The compiled weighted Gram matrix X^T diag(c) X equals scipy's two sparse products bit for bit (sums over the rows
in increasing order), on uneven and empty rows, zero weights and cancelling entries; and the centralised Newton
solver that uses it returns the optimum it returned with scipy's Hessian."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from repro_dpadmm.algorithms import centralized as ce
from repro_dpadmm.kernels import gram


@pytest.mark.parametrize("N,d,density", [(1, 1, 1.0), (50, 7, 0.3), (400, 30, 0.12), (2000, 104, 0.1)])
def test_weighted_gram_equals_scipy(N, d, density):
    rng = np.random.default_rng(N + d)
    A = rng.standard_normal((N, d)) * np.exp(3 * rng.standard_normal((N, d)))  # wide magnitudes: order matters
    A[rng.random((N, d)) > density] = 0.0
    X = sp.csr_matrix(A)
    c = rng.random(N)
    c[rng.random(N) < 0.1] = 0.0
    got = gram.weighted_gram(X, c)
    want = gram.weighted_gram_reference(X, c)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[got == 0]).any()  # zeros are +0.0, as scipy's dense copy holds them
    assert got.flags["F_CONTIGUOUS"] == want.flags["F_CONTIGUOUS"]  # the layout decides the order of BLAS's sums
    assert got.flags["C_CONTIGUOUS"] == want.flags["C_CONTIGUOUS"]


def test_weighted_gram_cancelling_sums_are_positive_zero():
    X = sp.csr_matrix(np.array([[1.0, 1.0], [1.0, -1.0]]))
    got = gram.weighted_gram(X, np.array([1.0, 1.0]))
    np.testing.assert_array_equal(got, gram.weighted_gram_reference(X, np.array([1.0, 1.0])))
    assert got[0, 1] == 0.0 and not np.signbit(got[0, 1])


def test_weighted_gram_checks_its_input():
    with pytest.raises(ValueError, match="sorted indices"):
        gram.weighted_gram(sp.csc_matrix(np.eye(2)), np.ones(2))
    with pytest.raises(ValueError, match="one weight per row"):
        gram.weighted_gram(sp.csr_matrix(np.eye(2)), np.ones(3))


@pytest.mark.parametrize("reg", ["l2", "l1"])
def test_centralised_optima_unchanged_by_the_kernel(monkeypatch, reg):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((300, 12))
    A[rng.random(A.shape) < 0.5] = 0.0
    A /= np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1.0)
    y = np.where(A @ rng.standard_normal(12) + 0.3 * rng.standard_normal(300) > 0, 1.0, -1.0)
    X = sp.csr_matrix(A)
    w = ce.solve(X, y, reg, 1e-3)
    monkeypatch.setattr(gram, "weighted_gram", gram.weighted_gram_reference)
    np.testing.assert_array_equal(w, ce.solve(X, y, reg, 1e-3))
