"""mechanisms.hu2020: one party's release in HU's ADMM sharing as a mechanism: its Spend and claims (Theorem 1,
Corollary 1), the one-step audit case on a feature-level canary, and the one-run canaries and score."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.mechanisms import hu2020 as mhu
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.bounds import hu2020 as hb
from repro_dpadmm.privacy.spend import REPLACE_ONE, totals
from repro_dpadmm.rng import repeat_generators

from _audit_synth import sparse_rows

DELTA = 1e-5


def _rows(N=400, d=12, seed=0):
    return sparse_rows(N, d, seed)


def test_noise_readings_are_checked_and_only_the_shared_one_is_sound():
    with pytest.raises(ValueError, match="noise_on"):
        mhu.SharedRelease(noise_on="nope")
    assert [mhu.SharedRelease(noise_on=n).sound for n in ("shared", "params", "authors")] == [True, False, False]


def test_spend_multiplier_is_sigma_over_c_and_corollary1_claims_it():
    mech, C, eps, delta, T = mhu.SharedRelease(), 1.9, 0.5, 1e-4, 20
    sigma = float(mech.paper_noise(C, eps, delta))
    spend = mech.spend(T, delta, sigma / C, 1e-5)
    assert spend.event.event.noise_multiplier == sigma / C and spend.event.count == T
    assert spend.neighbouring == REPLACE_ONE and mech.spend(T, None, sigma / C).bound is None
    assert totals(spend, DELTA, pld=False)["paper_eps"] == pytest.approx(hb.corollary1_epsilon(eps, T, 1e-5),
                                                                        rel=1e-12)


def test_claims_the_authors_runs_and_a_level():
    mech, C, T = mhu.SharedRelease(), 2.0, 10
    c = mech.paper_claim(3.0, 0.01, T, C=C, delta_prime=1e-5, delta=DELTA)
    assert c.noise == float(hb.theorem1_sigma(C, 3.0, 0.01, strict=False)) and c.delta == DELTA
    assert c.paper_delta == pytest.approx(T * 0.01 + 1e-5)
    assert c.paper_eps == pytest.approx(hb.corollary1_epsilon(3.0, T, 1e-5), rel=1e-12)
    assert c.tight_eps == accounting.analytic_gaussian_epsilon(c.noise / C, DELTA, steps=T)
    lev = mech.level_claim(1.0, DELTA, T, C=C)
    assert lev.tight_eps == pytest.approx(1.0, rel=1e-6) and lev.paper_delta == DELTA
    assert lev.paper_eps > lev.tight_eps          # advanced composition at delta / 2 is looser than the exact total


def test_audit_case_on_a_feature_level_canary():
    X, y = _rows()
    canary = mhu.sharing_canary(X.toarray(), y, rows=80, boundaries=[0, 7, 12], rho=1.0, lam=1e-3, c1=2.0,
                                warm_iterations=1, canary_columns=4, rng=np.random.default_rng(0))
    D0, D1 = canary.D
    assert np.linalg.norm(D0 - D1) <= 1 + 1e-12 and set(np.flatnonzero(np.abs(D0 - D1).sum(0))) == {canary.column}
    np.testing.assert_allclose(np.linalg.norm(D1, axis=1), 1.0)
    shared = mhu.SharedRelease().audit_case(canary, 1.0, DELTA)
    assert shared.sensitivity == canary.C[0] and shared.pair_distance == canary.share_gap and shared.correct
    assert shared.sigma == pytest.approx(np.sqrt(2 * np.log(1.25 / DELTA)) * canary.C[0], rel=1e-12)
    eq7 = mhu.SharedRelease(noise_on="params").audit_case(canary, 1.0, DELTA)
    assert eq7.score is not None and not eq7.correct and eq7.caveat
    # the release on D_0 lies in the column space of D_0m, the one on D_1 leaves it: the subspace test separates them
    np.testing.assert_allclose(eq7.score(eq7.step(0, 1.0, repeat_generators(0, 5, "h"))), 0.0, atol=1e-9)
    assert np.all(eq7.score(eq7.step(1, 1.0, repeat_generators(0, 5, "h"))) > 1e-6)


HU = {"rows": 200, "canaries": 6, "runs": 2, "boundaries": [0, 7, 12], "rho": 1.0, "lam": 1e-3, "c1": 2.0,
      "iterations_b1": 5}


def _setup(seed):
    X, y = _rows()
    return mhu.one_run_canaries(X, y, **HU, rows_rng=np.random.default_rng(seed),
                                signs_rng=np.random.default_rng(seed + 1))


def test_hu_canaries_are_feature_level_neighbours_with_unit_rows():
    st = _setup(0)
    D0, D1 = st.setups[0].D, st.plus[0].D
    np.testing.assert_allclose(np.linalg.norm(D0, axis=1), 1.0)            # Assumption 1.3 in both states
    np.testing.assert_allclose(np.linalg.norm(D1, axis=1), 1.0)
    diff = D1 - D0
    assert set(np.flatnonzero(np.abs(diff).sum(0))) <= set(st.cols.tolist())
    for j in np.flatnonzero(st.S[0] < 0):                                  # a flipped canary: one entry, by 1
        assert np.linalg.norm(diff[:, st.cols[j]]) == pytest.approx(1.0)
    other = np.setdiff1d(np.arange(7), st.cols)
    assert np.all(D0[np.r_[st.rows_a, st.rows_b]][:, other] == 0)          # canary rows: no other party-1 feature


def test_hu_score_separates_the_canaries_without_noise():
    st = _setup(1)
    mech = mhu.SharedRelease()
    score, energy, _ = mech.one_run_scores(st, 6, np.array([1e-9, 1e-9]), repeat_generators(0, 2, "x"))
    # noise-free: score = +sum ||Delta||^2 / 2 for S = +1 and -sum ||Delta||^2 / 2 for S = -1 (the residual is exactly
    # Delta_j for a canary in state -1, 0 otherwise)
    np.testing.assert_allclose(score, st.S * energy / 2, rtol=1e-6, atol=1e-9)
    assert np.all(energy > 0)
    out = mech.one_run(st, 6, 1e-9, 1.0, repeat_generators(0, 2, "x"))
    np.testing.assert_allclose(out.scores, score, rtol=1e-6, atol=1e-9)
    assert out.multiplier == pytest.approx(1e-9 * np.sqrt(6 / energy.mean()))
    assert out.extras["noisy_b1"] > 0
    with pytest.raises(ValueError, match="shared"):
        mhu.SharedRelease(noise_on="params").one_run(st, 2, 1.0, 1.0, repeat_generators(0, 2, "x"))
