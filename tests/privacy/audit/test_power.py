"""privacy.audit.power: the expected guesses of Gaussian canaries against simulated ones, and canaries_needed
against expected_bound."""

import math

import numpy as np
import pytest

from repro_dpadmm.privacy.audit import one_run
from repro_dpadmm.privacy.audit import power


@pytest.mark.parametrize("mu, fraction", [(0.3, 1.0), (0.3, 0.05), (1.5, 0.1)])
def test_expected_correct_guesses_match_simulated_canaries(mu, fraction):
    m = 20_000
    r, ev, sd = power.expected_guesses(mu, m, fraction)
    rng = np.random.default_rng(1)
    got = []
    for _ in range(20):
        S = rng.choice([-1, 1], m)
        g = one_run.guesses(S * mu / 2 + rng.standard_normal(m), r // 2, r // 2)
        got.append(np.count_nonzero(g * S == 1))
    assert np.mean(got) == pytest.approx(ev, abs=3 * sd / math.sqrt(20) + 0.01 * r)
    assert np.std(got) == pytest.approx(sd, rel=0.5)


def test_no_signal_gives_half_right_and_no_bound():
    r, ev, _ = power.expected_guesses(0.0, 1000, 1.0)
    assert (r, ev) == (1000, 500.0)
    assert power.expected_bound(0.0, 1000, 1e-5, 0.05) == 0.0


def test_canaries_needed_is_where_the_expected_bound_crosses_the_target():
    mu, target = power.gdp_mu(20.0, 100), 0.3          # 4x control of a z = 80 claim over T = 100
    m = power.canaries_needed(mu, target, 1e-5, 0.05, "gdp")
    assert power.expected_bound(mu, m, 1e-5, 0.05, "gdp") > target
    assert power.expected_bound(mu, int(m / 1.2), 1e-5, 0.05, "gdp") <= target
    # more canaries never needed for a larger mu; a target above what any m shows is unreachable
    assert power.canaries_needed(2 * mu, target, 1e-5, 0.05, "gdp") <= m
    assert power.canaries_needed(0.01, 5.0, 1e-5, 0.05, "steinke") == math.inf
    # a strong canary needs only a handful: the search ends on neighbouring integers
    assert 10 <= power.canaries_needed(20.0, 3.0, 1e-5, 0.05 / 6) <= 40
