"""privacy.audit.two_datasets: the threshold test and its Clopper-Pearson lower bound on Gaussian pairs of known
epsilon."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.audit import two_datasets as aud

DELTA, ALPHA = 1e-5, 0.05


def test_counts_of_threshold_tests():
    c = aud.counts([0.0, 1.0, 2.0, 3.0], [1.0, 2.5, 4.0], [0.5, 2.0, 10.0])
    assert c["FP"].tolist() == [3, 1, 0] and c["TN"].tolist() == [1, 3, 4]
    assert c["TP"].tolist() == [3, 2, 0] and c["FN"].tolist() == [0, 1, 3]


@pytest.mark.parametrize("z", [4.84, 2.45])
def test_audit_of_a_gaussian_pair_stays_below_its_exact_epsilon(z):
    """A Gaussian mechanism with noise multiplier z: the lower bound never exceeds its exact epsilon."""
    exact = aud.gaussian_eps(z, DELTA)
    for seed in range(3):
        r = aud.run_audit(aud.gaussian_pair_sampler(1 / z, 20, np.random.default_rng(seed)), delta=DELTA,
                          alpha=ALPHA, trials=30_000, calibration_trials=10_000)
        assert 0 <= r.eps_lo < exact
        assert r.counts.P == r.counts.N == 30_000


def test_audit_detects_four_times_too_little_noise():
    """Claimed eps = 1 at delta = 1e-5 (z = 4.84, exact eps 0.75): with sigma / 4 the bound exceeds the claim."""
    z = np.sqrt(2 * np.log(1.25 / DELTA)) / 1.0
    r = aud.run_audit(aud.gaussian_pair_sampler(4 / z, 20, np.random.default_rng(0)), delta=DELTA, alpha=ALPHA,
                      trials=30_000, calibration_trials=10_000)
    assert r.eps_lo > 1.0
    assert r.eps_lo < aud.gaussian_eps(z / 4, DELTA)


def test_audit_is_deterministic_per_seed():
    run = lambda s: aud.run_audit(aud.gaussian_pair_sampler(0.5, 5, np.random.default_rng(s)), delta=DELTA,  # noqa
                                  alpha=ALPHA, trials=5_000, calibration_trials=2_000, chunk=1_500)
    a, b, c = run(1), run(1), run(2)
    assert a == b
    assert a.counts != c.counts


def test_audit_rejects_bad_settings():
    s = aud.gaussian_pair_sampler(0.5, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="delta"):
        aud.run_audit(s, delta=0.0, alpha=ALPHA, trials=1000, calibration_trials=1000)
    with pytest.raises(ValueError, match="alpha"):
        aud.run_audit(s, delta=DELTA, alpha=0.7, trials=1000, calibration_trials=1000)
    with pytest.raises(ValueError, match="trials"):
        aud.run_audit(s, delta=DELTA, alpha=ALPHA, trials=10, calibration_trials=1000)


def test_ceilings_the_metrics_show():
    """gaussian_eps is the exact epsilon of one Gaussian release (analytic Gaussian); the trial cap is the bound of
    a perfect test, which grows with the trials and no audit on that many trials exceeds."""
    assert aud.gaussian_eps(3.0, DELTA) == pytest.approx(accounting.analytic_gaussian_epsilon(3.0, DELTA), rel=1e-3)
    assert aud.gaussian_eps(0.0, DELTA) == float("inf") and np.isnan(aud.gaussian_eps(None, DELTA))
    cap = aud.trial_cap(20_000, DELTA, ALPHA)
    assert 0 < cap < np.log(20_000) and aud.trial_cap(200_000, DELTA, ALPHA) > cap
    r = aud.run_audit(aud.gaussian_pair_sampler(50.0, 2, np.random.default_rng(0)), delta=DELTA, alpha=ALPHA,
                      trials=20_000, calibration_trials=1_000)
    assert r.fpr == r.fnr == 0 and r.eps_lo == pytest.approx(cap)
