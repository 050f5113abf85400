"""privacy.audit.trials: trials from a mechanism's own per-repeat code at the cost of one draw (TrialNoise), the
affine sampler, and one audit with the noise as claimed and as a 4x control, on a Gaussian release of known epsilon."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.audit import trials as tr

DELTA = 1e-5


def test_trial_noise_hands_each_trial_its_row_of_one_draw():
    pool = tr.TrialNoise(np.random.default_rng(3), 4, record=True)
    first = [h.standard_normal((2, 3)) for h in pool.handles]
    second = [h.standard_normal(5) for h in pool.handles]
    ref = np.random.default_rng(3)
    np.testing.assert_array_equal(np.stack(first), ref.standard_normal((4, 2, 3)))
    np.testing.assert_array_equal(np.stack(second), ref.standard_normal((4, 5)))
    assert pool.drawn().shape == (4, 11)
    with pytest.raises(ValueError, match="same shapes"):
        pool.handles[0].standard_normal(2)
        pool.handles[1].standard_normal(3)
    with pytest.raises(ValueError, match="float64"):
        pool.handles[0].standard_normal(2, dtype=np.float32)


def test_affine_fit_recovers_the_map_and_rejects_a_non_gaussian_step():
    rng = np.random.default_rng(0)
    f, J = rng.normal(size=3), rng.normal(size=(4, 3))

    def affine(b, factor, rngs):
        return np.stack([f + factor * g.standard_normal(4) @ J for g in rngs])

    fit = tr.fit_affine(affine, 0, 2.0, np.random.default_rng(1))
    np.testing.assert_allclose(fit.f, f, atol=1e-10)
    np.testing.assert_allclose(fit.J, 2.0 * J, atol=1e-10)

    def clipped(b, factor, rngs):
        return np.clip(affine(b, factor, rngs), -0.5, 0.5)

    with pytest.raises(ValueError, match="not affine"):
        tr.fit_affine(clipped, 0, 1.0, np.random.default_rng(1))


def _gaussian_release(epsilon: float, dim: int = 6) -> tr.AuditCase:
    """The classic Gaussian mechanism on a value of sensitivity 1 (D_1's value one unit further along e_1), with
    sigma = sqrt(2 ln(1.25/delta)) / epsilon, released through per-trial generators as a library step would draw."""
    sigma = np.sqrt(2 * np.log(1.25 / DELTA)) / epsilon
    value = np.zeros((2, dim))
    value[1, 0] = 1.0

    def step(b, factor, rngs):
        return value[b] + np.stack([g.standard_normal(dim) for g in rngs]) * sigma * factor

    return tr.AuditCase(label="Gaussian", paper="-", epsilon=epsilon, delta=DELTA, sigma=sigma, sensitivity=1.0,
                        paper_sensitivity=1.0, pair_distance=1.0, step=step, neighbours="unit shift")


@pytest.mark.parametrize("sampling", ["affine", "direct"])
def test_audit_of_a_known_gaussian_stays_below_its_epsilon_and_catches_the_4x_control(sampling):
    case = _gaussian_release(1.0)
    exact = accounting.analytic_gaussian_epsilon(case.sigma, DELTA)     # 0.75: the classic calibration is loose
    out = tr.audit_variants(case, {"claimed": 1.0, "control": 0.25}, seed=0, labels=("test",), alpha=0.05,
                            trials=30_000, calibration_trials=10_000, sampling=sampling)
    assert 0 <= out["claimed"].result.eps_lo < exact < case.epsilon
    assert out["control"].result.eps_lo > case.epsilon                  # 4x too little noise: caught
    assert out["control"].result.eps_lo < accounting.analytic_gaussian_epsilon(case.sigma / 4, DELTA)
    assert out["control"].noise_factor == 0.25 and (out["claimed"].fits is None) == (sampling == "direct")
    again = tr.audit_variants(case, {"claimed": 1.0}, seed=0, labels=("test",), alpha=0.05, trials=30_000,
                              calibration_trials=10_000, sampling=sampling)
    assert again["claimed"].result == out["claimed"].result            # streams depend on (seed, labels, variant)


def test_sampling_mode_is_checked():
    with pytest.raises(ValueError, match="sampling"):
        tr.audit_variants(_gaussian_release(1.0), {"claimed": 1.0}, seed=0, labels=(), alpha=0.05, trials=100,
                          calibration_trials=100, sampling="fast")
