"""The vectorised sigmoid and loss (kernels/logistic_math.py) against scipy's expit and numpy's logaddexp, which use
the C library per element: equal to an ulp everywhere, exactly equal at the edges (zeros, infinities, overflow, NaN),
in place, keeping the layout."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from repro_dpadmm.kernels.logistic_math import loss_inplace, sigmoid_neg_inplace
from repro_dpadmm.problems.logistic import loss, sigmoid_neg

EDGES = np.array([0.0, -0.0, 1e-300, -1e-300, 5e-324, -5e-324, 36.7, -36.7, 709.0, -709.0, 745.2, -745.2, 800.0,
                  -800.0, np.inf, -np.inf])


def _values(seed):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.standard_normal(20_000) * s for s in (1e-9, 1e-3, 0.1, 1, 10, 100)])


def _ulps(a, b):
    """Distance in units in the last place of the larger magnitude."""
    return np.abs(a - b) / np.spacing(np.maximum(np.abs(a), np.abs(b)))


def test_sigmoid_is_expit_to_an_ulp_and_exact_at_the_edges():
    z = _values(0)
    got = sigmoid_neg_inplace(z.copy())
    ref = expit(-z)
    assert _ulps(got, ref).max() <= 2
    assert 0 < np.mean(got != ref) < 0.2          # it is numpy's exp, not the C library's (else this lever is moot)
    np.testing.assert_array_equal(sigmoid_neg(EDGES), expit(-EDGES))
    assert sigmoid_neg(np.array([800.0]))[0] == 0.0 and sigmoid_neg(np.array([-800.0]))[0] == 1.0
    assert np.isnan(sigmoid_neg(np.array([np.nan])))[0]


def test_loss_is_logaddexp_to_an_ulp_and_exact_at_the_edges():
    z = _values(1)
    got = loss_inplace(z.copy())
    ref = np.logaddexp(0.0, -z)
    assert _ulps(got, ref).max() <= 2
    np.testing.assert_array_equal(loss(EDGES), np.logaddexp(0.0, -EDGES))
    assert loss(np.array([0.0]))[0] == np.log(2.0) and loss(np.array([np.inf]))[0] == 0.0
    assert loss(np.array([-np.inf]))[0] == np.inf and np.isnan(loss(np.array([np.nan])))[0]
    assert loss(np.array([-1000.0]))[0] == 1000.0            # no overflow: max(-z, 0) + log1p(e^{-|z|})


def test_in_place_keeps_the_array_and_its_layout_and_refuses_what_it_cannot_write():
    rng = np.random.default_rng(7)
    z = np.asfortranarray(rng.standard_normal((50, 7)) * 5)
    ref = loss(z)
    got = loss_inplace(z)
    assert got is z and got.flags.f_contiguous and np.array_equal(got, ref)
    z = rng.standard_normal((6, 6))[:, ::2]                   # a strided view is written in place too
    want = sigmoid_neg(z)
    assert sigmoid_neg_inplace(z) is z and np.array_equal(z, want)
    with pytest.raises(ValueError, match="float64"):
        loss_inplace(np.zeros(3, dtype=np.float32))
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        sigmoid_neg_inplace(ro)
