"""privacy.audit.one_run: the one-run bound of Steinke, Nasr and Jagielski (2023) against a direct binomial sum, the
paper's printed values, and Gaussian canaries of known epsilon."""

import math

import numpy as np
import pytest

from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.audit import one_run as ora


# ------------------------------------------------------------------------------------------------- the bound
def _p_value_by_hand(m, r, v, eps, delta):
    """Corollary 5.4's p-value summed term by term with exact binomial coefficients."""
    q = math.exp(eps) / (1 + math.exp(eps))
    pmf = [math.comb(r, j) * q ** j * (1 - q) ** (r - j) for j in range(r + 1)]
    beta = sum(pmf[v:])
    alpha = max((sum(pmf[v - i:v]) / i for i in range(1, v + 1)), default=0.0)
    return min(beta + 2 * m * delta * alpha, 1.0)


@pytest.mark.parametrize("m, r, v, eps, delta", [(50, 20, 15, 0.5, 1e-3), (200, 40, 33, 1.0, 1e-5),
                                                 (30, 30, 30, 2.0, 0.0), (100, 10, 4, 0.1, 1e-2)])
def test_p_value_matches_a_direct_binomial_sum(m, r, v, eps, delta):
    assert ora.p_value(m, r, v, eps, delta) == pytest.approx(_p_value_by_hand(m, r, v, eps, delta), rel=1e-9)


@pytest.mark.parametrize("first", [1, 3, 256])
@pytest.mark.parametrize("r, v, eps", [(140_000, 89_638, 1.0), (140_000, 89_638, 0.3), (2000, 1900, 0.0),
                                       (2000, 700, 2.0), (50, 50, 5.0), (5000, 1, 0.5)])
def test_alpha_stops_early_yet_equals_the_sum_over_every_term(r, v, eps, first):
    """The chunked maximum with its early stop equals the maximum over all v running sums bit for bit, where the
    maximum lies at the first term and where it lies thousands of terms away (v far above r q at eps = 0)."""
    from scipy.stats import binom

    q = 1.0 / (1.0 + np.exp(-eps))
    i = np.arange(1, v + 1)
    every = float(np.max(np.cumsum(binom.pmf(v - i, r, q)) / i))
    assert ora._alpha(r, v, q, first=first) == every


def test_bound_reproduces_the_papers_printed_values():
    # Appendix D's example (m = 1000, r = 100, v = 75, delta = 1e-4, 95%): 0.673; and one of Section 7's runs.
    assert ora.epsilon_lower_bound(1000, 100, 75, 1e-4, 0.05) == pytest.approx(0.673, abs=1e-3)
    assert ora.epsilon_lower_bound(100_000, 1510, 1439, 1e-5, 0.05) == pytest.approx(2.675, abs=2e-3)


def test_pure_dp_bound_is_the_binomial_tail_inverted():
    # delta = 0: the bound is ln(q / (1 - q)) for the q with P[Binomial(r, q) >= v] = level (all guesses correct:
    # q^r = level).
    r, level = 40, 0.05
    q = level ** (1 / r)
    assert ora.epsilon_lower_bound(r, r, r, 0.0, level) == pytest.approx(math.log(q / (1 - q)), abs=1e-5)
    assert ora.epsilon_lower_bound(100, 40, 20, 0.0, level) == 0.0      # chance level: no bound


def test_bad_counts_are_rejected():
    with pytest.raises(ValueError, match="v <= r <= m"):
        ora.p_value(10, 20, 5, 1.0, 1e-5)
    with pytest.raises(ValueError, match="level"):
        ora.epsilon_lower_bound(10, 5, 5, 1e-5, 1.5)


def test_guesses_take_the_extremes():
    g = ora.guesses(np.array([0.1, 5.0, -3.0, 0.0, 2.0]), 2, 1)
    assert g.tolist() == [0, 1, -1, 0, 1]


def _gaussian_canaries(mu, m, seed):
    rng = np.random.default_rng(seed)
    S = rng.choice([-1, 1], m)
    return S * mu / 2 + rng.standard_normal(m), S


def test_audit_of_a_gaussian_mechanism_never_exceeds_its_epsilon_and_flags_the_4x_control():
    # Each canary's score is N(S mu / 2, 1): a mu-GDP mechanism per canary, whose exact epsilon at delta is
    # accounting.gaussian_epsilon_exact(1 / mu, delta). Fixed seeds, 95% confidence.
    delta, mu = 1e-5, 0.2
    eps = accounting.gaussian_epsilon_exact(1.0 / mu, delta)
    for seed in range(5):
        s, S = _gaussian_canaries(mu, 10_000, seed)
        assert ora.audit(s, S, delta, 0.05).eps_lo <= eps
        s, S = _gaussian_canaries(4 * mu, 10_000, 100 + seed)
        assert ora.audit(s, S, delta, 0.05).eps_lo > eps
