"""privacy.calibrate: the monotone root finder, the Gaussian multipliers for a total (exact and PLD), and the
two-stage calibration of a pure-DP bound with a noise-free part."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.privacy import accounting, calibrate
from repro_dpadmm.privacy.bounds import zhang2018 as zb


def test_solve_meets_target_from_below_for_either_direction():
    for increasing, f in ((False, lambda x: 3.0 / x ** 0.5), (True, lambda x: 0.1 * x + 0.01 * x ** 3)):
        for target in (0.1, 1.0, 3.0):
            cal = calibrate.solve(f, target, lo=1.0, hi=2.0, increasing=increasing, rtol=1e-3)
            assert cal.epsilon == pytest.approx(f(cal.value))
            assert (1 - 1e-3) * target <= cal.epsilon <= target


def test_solve_rejects_unreachable_targets_and_bad_brackets():
    with pytest.raises(ValueError, match="no parameter brings"):
        calibrate.solve(lambda x: 1.0 + 0.0 * x, 0.5, lo=1.0, hi=2.0, increasing=True)
    with pytest.raises(ValueError, match="target epsilon must be a positive"):
        calibrate.solve(lambda x: x, -1.0, lo=1.0, hi=2.0, increasing=True)
    with pytest.raises(ValueError, match="0 < lo < hi"):
        calibrate.solve(lambda x: x, 1.0, lo=2.0, hi=1.0, increasing=True)


def test_gaussian_multipliers_meet_a_total_exactly_and_by_pld():
    exact = calibrate.gaussian_multiplier_exact(1.0, 1e-5, 100)
    assert accounting.analytic_gaussian_epsilon(exact.value, 1e-5, steps=100) == pytest.approx(1.0, rel=1e-6)
    pld = calibrate.gaussian_multiplier(1.0, 1e-5, 100)
    assert pld.value >= exact.value * (1 - 1e-9)      # the PLD can only overstate epsilon: at least the exact z
    assert (1 - 2e-3) <= pld.epsilon <= 1.0
    with pytest.raises(ValueError, match="delta"):
        calibrate.gaussian_multiplier_exact(1.0, 0.0, 10)


def test_pure_schedule_splits_the_level_and_caps_C():
    B, V, T = np.full(3, 100.0), np.array([2.0, 1.0, 1.0]), 20

    def per_step(C, a):
        return zb.icml_per_iteration(C, B, V, np.full(T, 0.5), np.full(T, a))
    cal = calibrate.pure_schedule(per_step, 1.0, 1e-5, how="basic", floor_share=0.3, C_max=100.0)
    assert not cal.C_capped and cal.floor == pytest.approx(0.3, rel=3e-3) and 0 <= cal.rel_gap <= 2e-3
    # basic composition is a sum, so the noise-free share fixes C in closed form: T C 1.4 c_1 / (eta V_min B)
    assert cal.C == pytest.approx(0.3 * 0.5 * 1.0 * 100.0 / (T * 1.4 * zb.C1), rel=3e-3)
    capped = calibrate.pure_schedule(per_step, 1.0, 1e-5, how="basic", floor_share=0.3, C_max=1.0)
    assert capped.C_capped and capped.C == 1.0 and capped.floor < 0.3 and 0 <= capped.rel_gap <= 2e-3
    with pytest.raises(ValueError, match="floor_share"):
        calibrate.pure_schedule(per_step, 1.0, 1e-5, how="basic", floor_share=1.0, C_max=1.0)
