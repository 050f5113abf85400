"""privacy.accounting: the classic moments accountant, dp-accounting's RDP and PLD totals of composed Gaussian steps
against reference values, the analytic Gaussian (Balle & Wang; mu-GDP composition) and the exact optimal composition
of pure-DP steps (Kairouz, Oh, Viswanath), and reading the multipliers back from a composed event."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import comb

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
    """Reference values: 100 steps of multiplier sqrt(2 ln(1.25/1e-5))/0.1 give 0.751 (PLD) and 0.822 (RDP) at 1e-5;
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


@pytest.mark.parametrize("z", [1.0, 2.0, 5.0, 20.0])
def test_accountant_matches_analytic_gaussian_for_one_mechanism(z):
    """dp-accounting's PLD epsilon of one Gaussian mechanism equals Balle & Wang's analytic Gaussian epsilon."""
    delta = 1e-5
    exact = accounting.analytic_gaussian_epsilon(z, delta)
    assert accounting.gaussian_epsilon_exact(z, delta) == pytest.approx(exact, rel=1e-3, abs=1e-5)
    # RDP can only overstate; the classic calibration z = sqrt(2 ln(1.25/delta))/eps is sound for eps < 1
    assert accounting.rdp_epsilon(z, delta, steps=1) >= exact
    eps_classic = math.sqrt(2 * math.log(1.25 / delta)) / z
    if eps_classic < 1:
        assert exact <= eps_classic


def test_analytic_gaussian_solves_its_delta_equation_and_composes_as_gdp():
    from scipy.stats import norm

    z, delta, T = 3.0, 1e-5, 100
    eps = accounting.analytic_gaussian_epsilon(z, delta, steps=T)
    mu = math.sqrt(T) / z
    assert norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) == pytest.approx(delta,
                                                                                                         rel=1e-6)
    # T steps with multiplier z are one Gaussian with multiplier z / sqrt(T); PLD agrees to its discretisation
    assert eps == pytest.approx(accounting.analytic_gaussian_epsilon(z / math.sqrt(T), delta))
    assert accounting.pld_epsilon(z, delta, steps=T) == pytest.approx(eps, rel=2e-3)


def _kov_epsilon(eps0: float, k: int, delta: float) -> float:
    """Exact optimal composition of k eps0-DP mechanisms (Kairouz, Oh, Viswanath 2015), from the binomial privacy
    loss of randomised response: delta(eps) = sum_l C(k,l) [e^{(k-l) eps0} - e^eps e^{l eps0}]_+ / (1 + e^eps0)^k."""
    l = np.arange(k + 1)

    def excess(eps):
        terms = comb(k, l) * np.maximum(np.exp((k - l) * eps0) - np.exp(eps + l * eps0), 0.0)
        return terms.sum() / (1 + math.exp(eps0)) ** k - delta
    return brentq(excess, 0.0, k * eps0) if excess(0.0) > 0 else 0.0


@pytest.mark.parametrize("eps0, k", [(0.05, 20), (0.2, 10), (0.01, 100)])
def test_pure_composition_matches_the_exact_optimal_composition(eps0, k):
    delta = 1e-5
    exact = _kov_epsilon(eps0, k, delta)
    got = accounting.pure_composed_epsilon(np.full(k, eps0), delta)
    assert exact <= got <= exact * 1.01  # PLD rounds up: never below the truth, within 1%
    assert accounting.pure_composed_epsilon(np.full(k, eps0), delta, how="basic") == pytest.approx(k * eps0)
    # heterogeneous budgets: between the exact value of the smaller and of the larger homogeneous sequences
    mixed = accounting.pure_composed_epsilon(np.r_[np.full(k // 2, eps0), np.full(k - k // 2, 2 * eps0)], delta)
    assert got < mixed < _kov_epsilon(2 * eps0, k, delta) * 1.01


def test_a_record_unpickled_before_any_accounting_is_still_recognised(tmp_path):
    """dp_accounting is imported on first use; a part file's pickled record read first (its unpickling imports
    dp_accounting.dp_event) must give the classes accounting checks against (a half-imported lazy module once made
    a second copy of them, and XU Fig. 2 failed on its part files)."""
    import pickle
    import subprocess
    import sys

    from repro_dpadmm.privacy.spend import gaussian_steps

    path = tmp_path / "event.pkl"
    path.write_bytes(pickle.dumps(gaussian_steps(2.0, 3)))
    code = ("import pickle, sys; from repro_dpadmm.privacy import accounting; "
            "assert 'dp_accounting' not in sys.modules; "
            f"e = pickle.load(open({str(path)!r}, 'rb')); print(accounting.gaussian_multipliers(e))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[2. 2. 2.]"
