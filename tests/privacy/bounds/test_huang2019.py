"""privacy.bounds.huang2019: the step sizes and noise of docs/choices.md#huang-step-sizes (its check table), the paper's eps-bar of docs/choices.md#huang-total-privacy,
the DVP calibration, and the totals of a recorded run (``spend_totals``) against the accountants run directly."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.bounds import huang2019 as hb
from repro_dpadmm.privacy.spend import PAPER_BOUNDS, REPLACE_ONE

# docs/choices.md#huang-step-sizes check table: n = 100, m_i = 400, rho = 0.1; (eps, delta): eta/sigma at k = 1, 10, 100 (l1, l2), PVP sigma
TABLE = [
    (0.01, 1e-3, [(0.8434, 1.4687), (0.2667, 0.4905), (0.0843, 0.1579)],
     [(1.7986, 2.8785), (0.8213, 1.4331), (0.3021, 0.5538)], 18.882),
    (0.01, 1e-6, [(0.6015, 1.5032), (0.1902, 0.4946), (0.0602, 0.1584)],
     [(1.4720, 3.3996), (0.6220, 1.5515), (0.2201, 0.5706)], 26.494),
    (0.05, 1e-3, [(4.0873, 1.0957), (1.2925, 0.4323), (0.4087, 0.1483)],
     [(3.2134, 0.9184), (2.2547, 0.6948), (1.1601, 0.3926)], 3.7764),
    (0.1, 1e-3, [(7.4953, 0.8090), (2.3702, 0.3618), (0.7495, 0.1317)],
     [(3.5638, 0.4961), (2.8838, 0.4227), (1.7986, 0.2878)], 1.8882),
    (0.1, 1e-6, [(5.6451, 0.9560), (1.7851, 0.4013), (0.5645, 0.1416)],
     [(3.4137, 0.6743), (2.5922, 0.5454), (1.4720, 0.3400)], 2.6494),
    (0.2, 1e-3, [(11.716, 0.5094), (3.7048, 0.2552), (1.1716, 0.0990)],
     [(3.7693, 0.2585), (3.3514, 0.2370), (2.4814, 0.1877)], 0.9441),
]


def _close(value, table_value):
    """Equal to the table's printed digits: 1e-4 absolute (the table's resolution; 5 significant digits above 10)."""
    return abs(value - table_value) <= max(1e-4, 6e-5 * abs(table_value))


@pytest.mark.parametrize("eps, delta, l1, l2, pvp", TABLE)
def test_eta_sigma_table_spec_2_2_3(eps, delta, l1, l2, pvp):
    for reg, expected in (("l1", l1), ("l2", l2)):
        eta = hb.eta_schedule(reg, 100, 400, eps, delta)
        sig = hb.sigma(400, 0.1, eta, eps, delta)
        for k, (e_eta, e_sig) in zip((1, 10, 100), expected):
            assert _close(eta[k - 1], e_eta), (reg, k, eta[k - 1], e_eta)
            assert _close(sig[k - 1], e_sig), (reg, k, sig[k - 1], e_sig)
    assert _close(hb.pvp_sigma(400, 0.1, 1e-6, eps, delta), pvp)
    assert hb.pvp_sigma(400, 0.1, 1e-6, eps, delta) == pytest.approx(
        hb.noise_multiplier(eps, delta) * hb.pvp_sensitivity(400, 0.1, 1e-6), rel=1e-14)


def test_plugged_in_forms_of_the_paper():
    """§VI-E/F plugged-in formulas (the l1 one with the paper's extra 1/n, negligible) against eqs. (29)/(34)."""
    k, m, eps, delta, n = np.arange(1, 101), 400, 0.05, 1e-5, 100
    L = np.log(1.25 / delta)
    l1 = 23 * (2 * k * (1 + 1e-6 * np.sqrt(104) / n) ** 2 + 1664 * k * L / (m ** 2 * eps ** 2)) ** -0.5
    l2 = 1 / (0.25 + 1e-6 + 2 * np.sqrt(416 * k * L) / (89 * m * eps))
    assert np.allclose(hb.eta_schedule("l1", 100, m, eps, delta), l1, rtol=1e-5)
    assert np.allclose(hb.eta_schedule("l2", 100, m, eps, delta), l2, rtol=1e-12)
    # the noise multiplier is the same at every k and the z form equals the (eps, delta) form
    z = hb.noise_multiplier(eps, delta)
    eta = hb.eta_schedule("l2", 100, m, z=z)
    assert np.allclose(hb.sigma(m, 0.1, eta, eps, delta) / hb.sensitivity(m, 0.1, eta), z)
    assert np.allclose(eta, l2, rtol=1e-12)


EPS_BAR = {  # docs/choices.md#huang-total-privacy: delta -> eps -> (continuous lambda, integer lambda <= 32)
    1e-3: [(0.0988, 0.2274), (0.5009, 0.5009), (1.0193, 1.0193), (2.1087, 2.1087)],
    1e-4: [(0.0991, 0.2966), (0.5007, 0.5065), (1.0146, 1.0148), (2.0822, 2.0834)],
    1e-5: [(0.0993, 0.3668), (0.5005, 0.5355), (1.0117, 1.0118), (2.0661, 2.0671)],
    1e-6: [(0.0994, 0.4376), (0.5005, 0.5787), (1.0098, 1.0098), (2.0553, 2.0553)],
}


@pytest.mark.parametrize("delta", sorted(EPS_BAR))
def test_eps_bar_table_spec_2_4(delta):
    for eps, (cont, integer) in zip((0.01, 0.05, 0.1, 0.2), EPS_BAR[delta]):
        assert abs(hb.eps_bar(eps, delta, 100) - cont) < 1e-4
        assert abs(hb.eps_bar(eps, delta, 100, integer_orders=True) - integer) < 1e-4


def test_dvp_calibration_both_branches():
    small = hb.dvp_calibration(0.01, 400, 1e-6, 0.1)  # eps' = 0.01 - 2 ln(1.00625) < 0
    assert small["eps_prime"] == 0.005 and np.isclose(small["Delta"], 0.25 / (400 * np.expm1(0.0025)) - 0.100001)
    big = hb.dvp_calibration(0.1, 400, 1e-6, 0.1)
    assert big["Delta"] == 0 and np.isclose(big["eps_prime"], 0.1 - 2 * np.log1p(0.25 / (400 * 0.100001)))
    assert np.isclose(big["alpha"], big["eps_prime"] / 2)


@pytest.mark.parametrize("eps, m", [(0.01, 400), (0.05, 40), (0.1, 400), (0.2, 40)])
def test_dvp_epsilon_of_the_calibrated_noise_is_the_budget(eps, m):
    """Both branches of the calibration: what the noise (alpha) and the extra regulariser (Delta) give is eps."""
    cal = hb.dvp_calibration(eps, m, 1e-6, 0.1)
    assert hb.dvp_epsilon(cal["alpha"], cal["Delta"], m, 1e-6, 0.1) == pytest.approx(eps, rel=1e-12)
    # half the noise parameter, i.e. twice the noise, spends less
    assert hb.dvp_epsilon(cal["alpha"] / 2, cal["Delta"], m, 1e-6, 0.1) < eps
    with pytest.raises(ValueError, match="alpha"):
        hb.dvp_epsilon(0.0, cal["Delta"], m, 1e-6, 0.1)


def test_eps_bar_is_the_registered_paper_bound_of_a_gaussian_spend():
    assert PAPER_BOUNDS[hb.EPS_BAR] is hb.eps_bar
    z = hb.noise_multiplier(0.1, 1e-4)
    sp = hb.gaussian_spend(z, 100, 1e-4)
    assert sp.neighbouring == REPLACE_ONE and sp.bound == hb.EPS_BAR
    assert sp.bound_args == {"z": z, "T": 100, "total_delta": 1e-4}
    assert hb.gaussian_spend(z, 100, None).bound is None  # a run given z alone names no bound


@pytest.mark.parametrize("eps, delta, T", [(0.01, 1e-4, 100), (0.1, 1e-5, 100), (0.2, 1e-3, 6)])
def test_spend_totals_are_the_accountants_on_the_recorded_multiplier(eps, delta, T):
    """The totals of a recorded Gaussian run equal the paper's eps-bar and dp-accounting's RDP and PLD totals of T
    steps of z = sqrt(2 ln(1.25/delta))/eps at delta-bar = delta, bit for bit (the Huang items' PLD grid, 1e-4)."""
    z = hb.noise_multiplier(eps, delta)
    t = hb.spend_totals(hb.gaussian_spend(z, T, delta), delta)
    assert t["paper_eps"] == hb.eps_bar(eps, delta, T)
    assert t["paper_eps_int32"] == hb.eps_bar(eps, delta, T, integer_orders=True)
    assert t["rdp_eps"] == accounting.rdp_epsilon(z, delta, steps=T)
    assert t["pld_eps"] == accounting.pld_epsilon(z, delta, steps=T, discretization=1e-4)
    assert t["noise_multiplier"] == z and t["steps"] == T and t["delta"] == delta
    assert t["pld_eps"] < t["rdp_eps"] < t["paper_eps"]
    with pytest.raises(ValueError, match="delta-bar"):
        hb.spend_totals(hb.gaussian_spend(z, T, delta), delta / 10)


def test_spend_totals_of_pure_steps():
    """DVP's record: the paper bound dvp_total = basic composition T eps, and the optimal composition (PLD), within
    one discretisation cell per step of the accountant run on the budgets directly."""
    sp = hb.dvp_spend(0.05, 100)
    assert PAPER_BOUNDS[hb.DVP_TOTAL] is hb.dvp_total and sp.bound_args == {"epsilon": 0.05, "T": 100}
    t = hb.spend_totals(sp, 1e-4)
    assert t["paper_eps"] == 100 * 0.05 and t["rdp_eps"] is None
    assert t["basic_eps"] == pytest.approx(5.0, rel=1e-12)
    direct = accounting.pure_composed_epsilon(np.full(100, 0.05), 1e-4)
    assert abs(t["pld_eps"] - direct) <= 100 * 1e-3 * 0.05 + 1e-12
    assert t["pld_eps"] < t["basic_eps"]
