"""privacy.mechanisms: the l2-Laplace ("gamma-norm") sampler of DVP and ZKL, and the Gaussian calibration."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.privacy.mechanisms import check_epsilon_delta, gamma_norm, gaussian_multiplier


def test_gamma_norm_mean_norm():
    """E||b|| = d / alpha within 1% (10^5 draws), for DVP's alpha at eps = 0.1, m = 400 (docs/choices.md#huang-dvp)."""
    alpha = (0.1 - 2 * np.log1p(0.25 / (400 * 0.100001))) / 2
    r = np.linalg.norm(gamma_norm(np.random.default_rng(3), 104, alpha, size=(100_000,)), axis=-1)
    assert abs(r.mean() / (104 / alpha) - 1) < 0.01


def test_gaussian_multiplier_and_bad_budgets():
    assert gaussian_multiplier(0.1, 1e-4) == pytest.approx(np.sqrt(2 * np.log(1.25e4)) / 0.1, rel=1e-15)
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon_delta(1.5, 1e-4, max_epsilon=1.0)
    with pytest.raises(ValueError, match="delta"):
        check_epsilon_delta(0.1, 1.0)
