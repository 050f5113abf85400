"""problems.regularizers: HUANG's l1 and l2 regularisers and the soft threshold (the prox of the l1 norm, also XU's
y-update (3))."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from repro_dpadmm.problems import regularizers


def test_soft_threshold_exact():
    v = np.array([-3.0, -0.5, 0.0, 0.2, 0.5, 2.0])
    np.testing.assert_array_equal(regularizers.prox_l1(v, 0.5), [-2.5, 0.0, 0.0, 0.0, 0.0, 1.5])
    # it is the prox of kappa |.|: compare with a 1-d numerical argmin
    for vi in v:
        res = so.minimize_scalar(lambda y: 0.5 * abs(y) + 0.5 * (y - vi) ** 2, bounds=(-5, 5), method="bounded",
                                 options={"xatol": 1e-10})
        assert abs(res.x - regularizers.prox_l1(vi, 0.5)) < 1e-6



def test_regularisers_and_their_prox():
    w = np.array([[-2.0, 0.0, 0.5]])
    assert regularizers.value("l1", w)[0] == 2.5 and regularizers.value("l2", w)[0] == pytest.approx(2.125)
    np.testing.assert_array_equal(regularizers.subgradient("l1", w), [[-1.0, 0.0, 1.0]])   # sgn(0) = 0
    np.testing.assert_array_equal(regularizers.prox_l1(w, 1.0), [[-1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="regulariser"):
        regularizers.value("l3", w)
