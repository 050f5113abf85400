"""privacy.audit.canaries: the gradient canary reaches the replace-one sensitivity bound of a mean logistic
gradient; the one-run canaries sit on the coordinates the data uses least."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.privacy.audit import canaries


def _rows(N=300, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, d))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None], np.where(rng.random(N) < 0.5, 1.0, -1.0)


def test_gradient_canary_reaches_the_sensitivity_bound():
    X, y = _rows()
    c = canaries.gradient_canary(X, y, 50, state_norm=400.0, offset=0.05, rng=np.random.default_rng(1))
    assert c.m == 50 and np.array_equal(c.X[0][:-1], c.X[1][:-1]) and not np.allclose(c.X[0][-1], c.X[1][-1])
    np.testing.assert_allclose(np.linalg.norm([c.X[0][-1], c.X[1][-1]], axis=1), 1.0)   # unit-norm canaries
    assert c.u @ c.v == pytest.approx(0.0, abs=1e-12) and np.allclose(c.state, 400.0 * c.u)
    gap = c.gradient_gap()
    assert 0.99 * 2.0 / c.m < gap <= 2.0 / c.m * (1 + 1e-12)          # 99.9% of 2 c_1 / m
    again = canaries.gradient_canary(X, y, 50, state_norm=400.0, offset=0.05, rng=np.random.default_rng(1))
    assert np.array_equal(again.X[1], c.X[1])


@pytest.mark.parametrize("kw, message", [({"offset": 1.0}, "offset"), ({"state_norm": 0.0}, "state_norm")])
def test_gradient_canary_rejects_bad_settings(kw, message):
    X, y = _rows()
    args = {"state_norm": 400.0, "offset": 0.05, **kw}
    with pytest.raises(ValueError, match=message):
        canaries.gradient_canary(X, y, 50, rng=np.random.default_rng(0), **args)
    with pytest.raises(ValueError, match="norm <= 1"):
        canaries.gradient_canary(2 * X + 1, y, 50, state_norm=400.0, offset=0.05, rng=np.random.default_rng(0))


def test_least_used_coordinates_and_canary_rows():
    X, _ = _rows()
    X[:, [2, 5]] *= 0.01
    assert canaries.least_used(X, 2).tolist() == [2, 5]
    rows = canaries.canary_rows(np.array([2, 5]), 3, 8, 5.0)
    assert rows.shape == (6, 8) and np.all(rows.toarray()[np.arange(6), [2, 5] * 3] == 5.0) and rows.nnz == 6
    with pytest.raises(ValueError, match="coordinates"):
        canaries.least_used(X, 9)
