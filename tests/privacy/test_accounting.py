"""privacy.accounting: the classic moments accountant, dp-accounting's RDP and PLD totals of composed Gaussian steps
against reference values, and reading the multipliers back from a composed event."""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest

from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.spend import gaussian_steps, pure_steps


def test_moments_accountant_closed_form_is_the_minimum():
    z, t, delta = np.sqrt(2 * np.log(1.25 / 1e-5)) / 0.05, 100, 1e-5
    grid = accounting.moments_accountant_epsilon(z, t, delta, max_lambda=1e4)
    closed = accounting.moments_accountant_epsilon(z, t, delta)
    assert closed == pytest.approx(t / (2 * z * z) + np.sqrt(2 * t * np.log(1 / delta)) / z, rel=1e-14)
    assert abs(grid - closed) < 1e-6 and grid >= closed - 1e-12
    # Abadi et al.'s integer orders <= 32 can only be larger
    assert accounting.moments_accountant_epsilon(z, t, delta, max_lambda=32, integer_lambda=True) >= closed


def test_rdp_and_pld_reference_values_and_order():
    """TOOLCHAIN.md: 100 steps of multiplier sqrt(2 ln(1.25/1e-5))/0.1 give 0.751 (PLD) and 0.822 (RDP) at 1e-5;
    PLD is tight (the analytic Gaussian), RDP and the classic moments accountant overstate it."""
    z, delta = np.sqrt(2 * np.log(1.25 / 1e-5)) / 0.1, 1e-5
    pld, rdp = accounting.pld_epsilon(z, delta, steps=100), accounting.rdp_epsilon(z, delta, steps=100)
    assert abs(pld - 0.751) < 2e-3 and abs(rdp - 0.822) < 2e-3
    assert accounting.analytic_gaussian_epsilon(z, delta, 100) <= pld < rdp
    assert rdp < accounting.moments_accountant_epsilon(z, 100, delta)


def test_gaussian_multipliers_read_back_every_step():
    assert np.array_equal(accounting.gaussian_multipliers(gaussian_steps(2.5, 4)), [2.5] * 4)
    zs = accounting.gaussian_multipliers(gaussian_steps([1.0, 3.0, 1.0]))
    assert sorted(zs) == [1.0, 1.0, 3.0]
    assert accounting.gaussian_multipliers(dp_accounting.GaussianDpEvent(0.7)).tolist() == [0.7]
    assert accounting.gaussian_multipliers(pure_steps([0.1, 0.1])) is None
    mixed = dp_accounting.ComposedDpEvent([gaussian_steps(1.0, 2), pure_steps([0.1])])
    assert accounting.gaussian_multipliers(mixed) is None
