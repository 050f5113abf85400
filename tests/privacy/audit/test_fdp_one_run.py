"""privacy.audit.fdp_one_run: the f-DP one-run analysis of Mahloujifar, Melis and Chaudhuri (2024) against a direct
transcription of the authors' recursion, the pure-DP case where it must equal Steinke et al.'s binomial bound, and
Gaussian canaries of known mu."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.audit import fdp_one_run as fdp
from repro_dpadmm.privacy.audit import one_run as ora


def _consistent_by_hand(inverse_blow_up, m, r, v, level):
    """The authors' public recursion, line by line in plain Python (h, r lists, then r_0 + h_0 <= r / m)."""
    tau = level * r / m
    h, rr = [0.0] * (v + 1), [0.0] * (v + 1)
    h[v], rr[v] = tau * (r - v) / r, tau * v / r
    for i in range(v - 1, -1, -1):
        h[i] = max(h[i + 1], inverse_blow_up(rr[i + 1]))
        rr[i] = rr[i + 1] + (i / (r - i)) * (h[i] - h[i + 1])
    return rr[0] + h[0] <= r / m


@pytest.mark.parametrize("m, r, v", [(1000, 800, 500), (1000, 800, 600), (200, 40, 35), (5000, 100, 90)])
@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 3.0])
def test_gdp_recursion_matches_a_direct_transcription(m, r, v, mu):
    def inv(x):
        return float(norm.cdf(norm.ppf(x) - mu))
    assert fdp.consistent("gdp", mu, m, r, v, 0.05) == _consistent_by_hand(inv, m, r, v, 0.05)


@pytest.mark.parametrize("m, r, v", [(1000, 800, 500), (1000, 800, 600), (200, 40, 35), (5000, 100, 90)])
@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 3.0])
def test_eps_delta_recursion_matches_a_direct_transcription(m, r, v, eps):
    d = 1e-4

    def inv(x):
        return max(0.0, 1 - d - math.exp(eps) * (1 - x), math.exp(-eps) * (x - d))
    assert fdp.consistent("eps_delta", eps, m, r, v, 0.05, d) == _consistent_by_hand(inv, m, r, v, 0.05)


def test_bisection_lands_on_the_boundary():
    m, r, v, level = 1000, 800, 560, 0.05
    mu = fdp.gdp_lower_bound(m, r, v, level)
    assert 0 < mu
    assert not fdp.consistent("gdp", mu, m, r, v, level) and fdp.consistent("gdp", mu + 1e-4, m, r, v, level)


@pytest.mark.parametrize("r", [10, 40, 200])
def test_pure_dp_with_every_canary_guessed_right_is_steinkes_binomial_bound(r):
    # delta = 0, r = m, v = r: both analyses reduce to q^r = level, epsilon = ln(q / (1 - q))
    q = 0.05 ** (1 / r)
    assert fdp.epsilon_lower_bound(r, r, r, 0.0, 0.05) == pytest.approx(math.log(q / (1 - q)), abs=1e-4)
    assert fdp.epsilon_lower_bound(r, r, r, 0.0, 0.05) == pytest.approx(ora.epsilon_lower_bound(r, r, r, 0.0, 0.05),
                                                                         abs=1e-4)


def test_random_guesses_give_nothing_and_more_correct_guesses_give_more():
    assert fdp.gdp_lower_bound(1000, 1000, 500, 0.05) == 0.0
    assert fdp.epsilon_lower_bound(1000, 1000, 500, 1e-5, 0.05) == 0.0
    mus = [fdp.gdp_lower_bound(1000, 1000, v, 0.05) for v in (550, 600, 700, 900, 1000)]
    eps = [fdp.epsilon_lower_bound(1000, 1000, v, 1e-5, 0.05) for v in (550, 600, 700, 900, 1000)]
    assert all(np.diff(mus) > 0) and all(np.diff(eps) > 0) and mus[0] > 0


def test_the_gdp_bound_does_not_pay_for_delta_with_many_canaries():
    # 40,000 canaries, 52.5% of all guesses right: Steinke et al.'s bound pays 2 m delta = 0.8 and finds less than
    # the GDP reading of the same guesses
    m, v = 40_000, 21_000
    mu = fdp.gdp_lower_bound(m, m, v, 0.05)
    assert fdp.gdp_epsilon(mu, 1e-5) > ora.epsilon_lower_bound(m, m, v, 1e-5, 0.05)


@pytest.mark.parametrize("seed", range(3))
def test_audit_of_gaussian_canaries_stays_below_their_mu(seed):
    # scores N(+-mu/2, 1): exactly mu-GDP per canary; the audited mu is below mu and not far below with 20,000 of them
    mu, m = 0.5, 20_000
    rng = np.random.default_rng(seed)
    S = rng.choice([-1, 1], m)
    res = fdp.audit(S * mu / 2 + rng.standard_normal(m), S, 1e-5, 0.05)
    assert 0.3 * mu < res.mu_lo < mu
    assert res.eps_lo_gdp == pytest.approx(accounting.analytic_gaussian_epsilon(1 / res.mu_lo, 1e-5), rel=1e-6)
    assert res.eps_lo < res.eps_lo_gdp and res.canaries == m and res.correct <= res.guesses


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="v correct"):
        fdp.gdp_lower_bound(10, 20, 5, 0.05)
    with pytest.raises(ValueError, match="level"):
        fdp.epsilon_lower_bound(10, 10, 5, 1e-5, 1.5)
    with pytest.raises(ValueError, match="S must hold"):
        fdp.audit(np.zeros(4), np.array([1, 0, 1, -1]), 1e-5, 0.05)
