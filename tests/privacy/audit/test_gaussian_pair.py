"""The Gaussian-pair reading (privacy.audit.gaussian_pair) on simulated Gaussian mechanisms of known mu, many seeds at
once: the lower bound exceeds the true mu in no more than its level of the seeds (beyond binomial noise), the estimate
lies within its stated standard error as often as it says, a 4x under-noised control is flagged where the power
calculation says it will be, and the fit test rejects scores that are not a Gaussian pair."""

import numpy as np
import pytest
from scipy import stats

from repro_dpadmm.privacy.audit import gaussian_pair as gp
from repro_dpadmm.privacy.audit.fdp_one_run import gdp_epsilon


def _simulate(mu, m, seeds, rng, noise=None):
    """`seeds` one-run audits of m canaries of a Gaussian mechanism of this mu: S = +-1 with probability 1/2, score
    S mu / 2 + noise (standard normal unless given)."""
    S = np.where(rng.random((seeds, m)) < 0.5, 1, -1)
    z = rng.standard_normal((seeds, m)) if noise is None else noise((seeds, m))
    return S * (mu / 2) + z, S


@pytest.mark.parametrize("mu,m,level", [(0.0, 400, 0.05), (0.0325, 2000, 0.05), (0.27, 1000, 0.01),
                                        (0.72, 1000, 0.05), (3.0, 200, 0.05)])
def test_the_lower_bound_holds_at_its_confidence_over_many_seeds(mu, m, level):
    rng = np.random.default_rng(11)
    seeds = 1500
    scores, S = _simulate(mu, m, seeds, rng)
    b = gp.mu_bounds(scores, S, level)
    over = int(np.count_nonzero(b["mu_lo"] > mu))
    # never above mu beyond the confidence level (binomial noise allowed at 1e-4), and not so loose that it never is
    # (an exact bound is above mu in about `level` of the seeds; for mu = 0 the bound is clipped at 0, never above)
    assert over <= stats.binom.isf(1e-4, seeds, level)
    if mu > 0:
        assert over >= stats.binom.ppf(1e-4, seeds, level)
    # the stated standard error is the spread of the estimate: |mu_hat - mu| <= 1.96 se in about 95% of the seeds
    inside = np.mean(np.abs(b["mu_hat"] - mu) <= 1.96 * b["se"])
    assert 0.925 < inside < 0.975
    # the power calculation's median bound is the median of the simulated bounds
    assert np.median(b["mu_lo"]) == pytest.approx(gp.expected_mu_lo(mu, m, level), abs=0.15 * b["se"].mean() + 1e-9)


def test_a_scale_or_shift_of_the_scores_changes_nothing_and_flipped_states_give_zero():
    rng = np.random.default_rng(2)
    scores, S = _simulate(1.0, 500, 3, rng)
    a, b = gp.mu_bounds(scores, S, 0.05), gp.mu_bounds(7.0 * scores - 3.0, S, 0.05)
    assert np.allclose(a["mu_lo"], b["mu_lo"]) and np.allclose(a["mu_hat"], b["mu_hat"])
    assert np.all(gp.mu_bounds(-scores, S, 0.05)["mu_lo"] == 0.0)
    with pytest.raises(ValueError, match="two present"):
        gp.mu_bounds(np.zeros(3), np.array([1, -1, -1]), 0.05)


def test_the_4x_control_is_flagged_where_the_power_calculation_says_so():
    """A correct mechanism at the claim's mu and one with 4x too little noise (4 mu), at the canaries the power
    calculation asks for (2 standard deviations): the control is flagged in about 98% of the seeds or more, the
    correct one in no more than the level."""
    rng = np.random.default_rng(5)
    level, delta = 0.05 / 8, 1e-5
    mu = gp.gdp_mu_of_epsilon(1.0, delta)
    m = int(gp.canaries_needed(4 * mu, mu, level, sds=2.0))
    assert 50 < m < 1000
    seeds = 2000
    ctl = gp.mu_bounds(*_simulate(4 * mu, m, seeds, rng), level)
    assert np.mean(ctl["mu_lo"] > mu) >= 0.96
    ok = gp.mu_bounds(*_simulate(mu, m, seeds, rng), level)
    assert np.count_nonzero(ok["mu_lo"] > mu) <= stats.binom.isf(1e-4, seeds, level)
    # at a quarter of those canaries the control is not expected to be flagged in 98% of the runs, and is not
    few = gp.mu_bounds(*_simulate(4 * mu, m // 4, seeds, rng), level)
    assert gp.expected_mu_lo(4 * mu, m // 4, level, sds=2.0) < mu and np.mean(few["mu_lo"] > mu) < 0.9


def test_canaries_needed_for_a_ratio_and_the_epsilon_inverse():
    delta, level = 1e-5, 0.05 / 8
    for eps in (0.1, 1.0, 3.0, 50.0):
        assert gdp_epsilon(gp.gdp_mu_of_epsilon(eps, delta), delta) == pytest.approx(eps, rel=1e-8)
    mu = gp.gdp_mu_of_epsilon(3.0, delta)
    need = gp.canaries_needed(mu, gp.gdp_mu_of_epsilon(2.7, delta), level)
    assert gp.expected_eps(mu, need, delta, level) / 3.0 >= 0.9 > gp.expected_eps(mu, need / 1.1, delta, level) / 3.0
    # no number of canaries shows more than the canaries' own mu (e.g. record canaries at half the sensitivity)
    assert gp.canaries_needed(mu / 2, mu * 0.9, level) == np.inf


def test_the_fit_test_rejects_scores_that_are_not_a_gaussian_pair():
    rng = np.random.default_rng(8)
    level = 0.01
    gauss = [gp.audit(*_simulate(0.5, 300, 1, rng), 1e-5, level).fit_p for _ in range(100)]
    assert np.mean(np.array(gauss) < level) <= stats.binom.isf(1e-3, 100, level) / 100
    skewed = gp.audit(*_simulate(0.5, 4000, 1, rng, noise=lambda shape: rng.exponential(size=shape)), 1e-5, level)
    assert skewed.fit_p < level
    # equal means' spread, unequal variances (a pair the equal-variance model does not describe)
    S = np.where(rng.random(4000) < 0.5, 1, -1)
    wide = gp.audit(S * 0.25 + rng.standard_normal(4000) * np.where(S > 0, 2.0, 1.0), S, 1e-5, level)
    assert wide.fit_p < level and wide.equal_var_p < level and wide.sd_ratio > 1.5
    r = gp.audit(*_simulate(0.72, 4000, 1, rng), 1e-5, 0.05)
    assert r.eps_lo == pytest.approx(gdp_epsilon(r.mu_lo, 1e-5)) and r.eps_lo < r.eps_hat
