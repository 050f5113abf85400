"""The empirical privacy audit (beyond/audit): the statistics of privacy.audit on Gaussian pairs of known epsilon, the
trial machinery, and the audit of each mechanism as implemented (needs the data mirror)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from repro_dpadmm import config
from repro_dpadmm.experiments import beyond_audit as ba
from repro_dpadmm.privacy import audit as aud

DELTA, ALPHA = 1e-5, 0.05


# ------------------------------------------------------------------------------------------------- statistics
def test_counts_of_threshold_tests():
    c = aud.counts([0.0, 1.0, 2.0, 3.0], [1.0, 2.5, 4.0], [0.5, 2.0, 10.0])
    assert c["FP"].tolist() == [3, 1, 0] and c["TN"].tolist() == [1, 3, 4]
    assert c["TP"].tolist() == [3, 2, 0] and c["FN"].tolist() == [0, 1, 3]


@pytest.mark.parametrize("z", [4.84, 2.45])
def test_audit_of_a_gaussian_pair_stays_below_its_exact_epsilon(z):
    """A Gaussian mechanism with noise multiplier z: the lower bound never exceeds its exact epsilon."""
    exact = ba.gaussian_eps(z, DELTA)
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
    assert r.eps_lo < ba.gaussian_eps(z / 4, DELTA)


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


# ------------------------------------------------------------------------------------------------- trial machinery
def test_trial_noise_hands_each_trial_its_row_of_one_draw():
    pool = ba.TrialNoise(np.random.default_rng(3), 4, record=True)
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

    fit = ba.fit_affine(affine, 0, 2.0, np.random.default_rng(1))
    np.testing.assert_allclose(fit.f, f, atol=1e-10)
    np.testing.assert_allclose(fit.J, 2.0 * J, atol=1e-10)

    def clipped(b, factor, rngs):
        return np.clip(affine(b, factor, rngs), -0.5, 0.5)

    with pytest.raises(ValueError, match="not affine"):
        ba.fit_affine(clipped, 0, 1.0, np.random.default_rng(1))


# ------------------------------------------------------------------------------------------------- mechanisms
def _params(**over) -> dict:
    p = copy.deepcopy(config.item_params("beyond", "audit"))
    return {**p, "trials": 20_000, "calibration_trials": 10_000, "chunk": 20_000, **over}


@pytest.fixture(scope="module")
def data(processed_root):
    from repro_dpadmm.datasets import load

    adult, a9a = load("adult_huang2019", processed_root), load("a9a", processed_root)
    return {"adult_huang2019": (adult["X"], adult["y"]), "a9a": (a9a["X_train"], a9a["y_train"])}


@pytest.fixture(scope="module")
def mechanisms(data):
    mechs, skipped = ba.build_mechanisms(_params(), 0, data)
    assert not skipped
    return {m.key: m for m in mechs}


@pytest.mark.parametrize("key", ["huang_dpadmm", "huang_dpsgd", "xu_replace_one"])
def test_record_canary_reaches_the_sensitivity_bound(mechanisms, key):
    m = mechanisms[key]
    assert m.pair_distance <= m.sensitivity * (1 + 1e-12)
    assert m.pair_distance / m.sensitivity > 0.99
    if key.startswith("huang"):  # the classic Gaussian calibration: sigma / Delta = sqrt(2 ln(1.25/delta)) / eps
        assert m.sigma / m.sensitivity == pytest.approx(np.sqrt(2 * np.log(1.25 / m.delta)) / m.epsilon, rel=1e-12)


def test_hu_canary_exceeds_lemma1_per_step_bound(mechanisms):
    """A deterministic counterexample to the proof of HU Lemma 1: the canary moves party 1's share by more than the
    per-step bound 3/(d_m rho)[lambda c_1 + ||y|| + rho ||z|| + rho sum ||x~_k||] (rows of unit norm, one column
    changed with ||D_m - D'_m|| <= 1)."""
    m = mechanisms["hu_theorem1"]
    assert m.extras["share_gap"] > 2 * m.extras["lemma1_step_bound"]
    assert m.extras["share_gap"] < m.extras["lemma1_C"]      # C, with b_1 over the run, still holds here


def test_affine_trials_equal_the_library_step_on_the_same_draws(mechanisms):
    """The fast sampler's map reproduces the library's own outputs for the same normals (every mechanism), and the
    draws it skips are exactly those that do not reach the release."""
    with threadpool_limits(1):
        for key, m in mechanisms.items():
            for b in (0, 1):
                fit = ba.fit_affine(m.step, b, 1.0, np.random.default_rng(7))
                pool = ba.TrialNoise(np.random.default_rng(5), 100, record=True)
                out = m.step(b, 1.0, pool.handles)
                np.testing.assert_allclose(fit.f + pool.drawn() @ fit.J, out, rtol=0,
                                           atol=1e-9 * (1 + np.abs(out).max()))
                assert np.abs(fit.J[~fit.used]).max(initial=0.0) < 1e-9 * np.abs(fit.J).max()
                if key == "hu_theorem1":
                    assert fit.used.sum() == 100      # only party 1's noise (N = 100 values) reaches its share


@pytest.mark.parametrize("key", ["huang_dpadmm", "huang_dpsgd", "xu_replace_one", "hu_theorem1"])
def test_correct_mechanisms_never_exceed_their_claim(mechanisms, key):
    for seed in (0, 1, 2):
        out = ba.audit_one(mechanisms[key], _params(), seed, variants=("claimed",))
        assert out["claimed"]["result"].eps_lo <= mechanisms[key].epsilon


@pytest.mark.parametrize("key", ["huang_dpadmm", "huang_dpsgd", "xu_replace_one", "hu_theorem1"])
def test_four_times_too_little_noise_is_flagged(mechanisms, key):
    m = mechanisms[key]
    out = ba.audit_one(m, _params(trials=50_000, calibration_trials=20_000, chunk=50_000), 0)
    assert out["control"]["noise_factor"] == 0.25
    assert out["control"]["result"].eps_lo > m.epsilon
    assert out["claimed"]["result"].eps_lo <= m.epsilon


def test_audit_contradicts_xu_sensitivity_and_hu_eq7(mechanisms):
    """XU's sigma with Delta = c/n under replace-one, HU's noise on the parameters (eq. (7) read literally) and the
    authors' (eps, delta) calibration (noise in the column space of D_m) violate their claims; the tight accounting
    of XU's sigma says the same."""
    p = _params(trials=200_000, calibration_trials=50_000, chunk=50_000)
    xu = ba.audit_one(mechanisms["xu_paper"], p, 0, variants=("claimed",))["claimed"]["result"]
    assert xu.eps_lo > mechanisms["xu_paper"].epsilon
    m = mechanisms["xu_paper"]
    assert ba.gaussian_eps(m.sigma / m.sensitivity, m.delta) > m.epsilon
    for key in ("hu_eq7", "hu_authors"):     # eq. (7) read literally; the authors' (eps, delta) calibration
        hu = ba.audit_one(mechanisms[key], _params(), 0, variants=("claimed",))["claimed"]["result"]
        assert hu.eps_lo > 5 * mechanisms[key].epsilon
        assert hu.counts.FP == 0


def test_audit_metrics_are_deterministic_per_seed(data):
    p = _params(trials=2_000, calibration_trials=1_000, chunk=2_000,
                mechanisms={"x": {"kind": "xu2020", "epsilon": 2.0, "sensitivity_factor": 2}})
    strip = lambda m: {k: v for k, v in m.items() if not k.endswith("seconds")}  # noqa: E731
    a = strip(ba.metrics(ba.run(p, 0, data)["results"], p))
    b = strip(ba.metrics(ba.run(p, 0, data)["results"], p))
    c = strip(ba.metrics(ba.run(p, 1, data)["results"], p))
    assert a == b
    assert a != c


def test_bad_audit_parameters_are_rejected_before_work():
    with pytest.raises(ValueError, match="kind"):
        ba.check_params(_params(mechanisms={"x": {"kind": "nope", "epsilon": 1.0}}))
    with pytest.raises(ValueError, match="control_noise_factor"):
        ba.check_params(_params(control_noise_factor=4.0))
    with pytest.raises(ValueError, match="noise_on"):
        ba.check_params(_params(mechanisms={"x": {"kind": "hu2020", "epsilon": 1.0}}))


def test_missing_dataset_skips_its_mechanisms(data):
    mechs, skipped = ba.build_mechanisms(_params(), 0, {"adult_huang2019": data["adult_huang2019"]})
    assert {m.key for m in mechs} == {"huang_dpadmm", "huang_dpsgd", "xu_paper", "xu_replace_one"}
    assert set(skipped) == {"hu_theorem1", "hu_eq7", "hu_authors"} and "a9a" in skipped["hu_eq7"]
