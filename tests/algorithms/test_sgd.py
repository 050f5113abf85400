"""algorithms.sgd (HUANG baseline (5), distributed DPSGD, docs/choices.md#huang-dpsgd): both aggregation conventions, clipping, the
calibrated noise, and the Spend each noisy run records."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.algorithms import sgd
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.bounds import huang2019 as hb
from repro_dpadmm.privacy.spend import REPLACE_ONE
from repro_dpadmm.rng import repeat_generators

from _huang_synth import star_problem


def test_dpsgd_runs_and_reports_its_noise():
    A, b, data = star_problem(n=4, m=30, d=5, D=2, seed=8)
    hs = sgd.dpsgd(data, reg="l2", T=3, rngs=repeat_generators(0, 2, "s"), epsilon=0.1, delta=1e-4)
    assert np.isclose(hs.meta["sigma"], 2 * hb.noise_multiplier(0.1, 1e-4) / 30)
    assert hs.meta["noise_multiplier"] == pytest.approx(hb.noise_multiplier(0.1, 1e-4))
    assert np.array_equal(hs.traces["err"], hs.traces["err_global"])


def test_dpsgd_conventions_and_noiseless_step():
    A, b, data = star_problem(n=3, m=10, d=4, D=1, seed=9)
    w = np.random.default_rng(0).standard_normal((1, 4))
    g, w_avg = sgd.noiseless_step(data, w, lr=0.1, lam_n=0.01, reg="l2", convention="average", clip=None)
    z = b[0] * (A[0] @ w[0])
    direct = (-(b[0] / (1 + np.exp(z)))[..., None] * A[0]).mean(1)  # (n, d)
    assert np.allclose(g[0], direct)
    assert np.allclose(w_avg[0], w[0] - 0.1 * (direct.mean(0) + 0.01 * w[0]))
    _, w_sum = sgd.noiseless_step(data, w, lr=0.1, lam_n=0.01, reg="l2", convention="sum", clip=None)
    assert np.allclose(w_sum[0], w[0] - 0.1 * (direct.sum(0) + 3 * 0.01 * w[0]))
    # clipping at C bounds every per-example gradient norm; with ||a|| <= 1 and C = 1 it is a no-op
    g_clip, _ = sgd.noiseless_step(data, w, clip=1.0)
    assert np.allclose(g_clip, g)
    g_small, _ = sgd.noiseless_step(data, w, clip=1e-3)
    assert np.all(np.linalg.norm(g_small, axis=-1) <= 1e-3 + 1e-12)
    with pytest.raises(ValueError, match="convention"):
        sgd.dpsgd(data, reg="l2", T=2, sigma_value=0.0, convention="mean")


def test_dpsgd_spend_is_the_noise_it_drew():
    """Each agent's T noisy mean gradients: multiplier = sigma / (2 C / m) (replace-one), the drawn noise has that
    sigma, and the totals are the accountants' on that multiplier."""
    A, b, data = star_problem(n=50, m=20, d=8, seed=1)
    rngs = repeat_generators(0, 2, "g")
    h = sgd.dpsgd(data, reg="l2", T=4, rngs=rngs, epsilon=0.2, delta=1e-5, clip=0.5, record=False)
    (sp,) = h.spends
    z = accounting.gaussian_multipliers(sp.event)
    assert z.size == 4 and sp.neighbouring == REPLACE_ONE and sp.bound == hb.EPS_BAR
    np.testing.assert_allclose(z, h.meta["sigma"] / sgd.sensitivity(20, 0.5), rtol=1e-12)
    # one step's noise (20 repeats; the sum convention, the default): lr times the sum of the agents' noise, so its
    # spread is z sensitivity sqrt(n)
    w0 = np.zeros((20, 8))
    _, w1 = sgd.noiseless_step(data, w0, lr=0.1, lam_n=1e-6, reg="l2", clip=0.5)
    h1 = sgd.dpsgd(data, reg="l2", T=1, rngs=repeat_generators(0, 20, "g"), epsilon=0.2, delta=1e-5, clip=0.5,
                   record=False)
    xi = (w1 - h1.meta["w"]) / 0.1
    assert abs(xi.std() / np.sqrt(50) / (z[0] * sgd.sensitivity(20, 0.5)) - 1) < 0.25  # 160 draws: se ~6%
    t = hb.spend_totals(sp, 1e-5)
    assert t["paper_eps"] == hb.eps_bar(0.2, 1e-5, 4) and t["rdp_eps"] == accounting.rdp_epsilon(z[0], 1e-5, 4)
    # sigma given directly: the multiplier is sigma over the sensitivity; no clipping bound, no record
    h = sgd.dpsgd(data, reg="l2", T=2, rngs=rngs, sigma_value=0.3, clip=0.5)
    assert accounting.gaussian_multipliers(h.spends[0].event)[0] == pytest.approx(0.3 / sgd.sensitivity(20, 0.5))
    assert h.spends[0].bound is None
    assert sgd.dpsgd(data, reg="l2", T=2, rngs=rngs, sigma_value=0.3, clip=None).spends == []
    assert sgd.dpsgd(data, reg="l2", T=2, sigma_value=0.0).spends == []


def test_sum_convention_is_the_average_convention_at_n_times_the_learning_rate():
    """The two conventions are one family (algorithms.sgd): sum at lr equals average at n lr, draw for draw, so one
    learning-rate sweep reads in either unit; the default is the sum convention."""
    A, b, data = star_problem(n=5, m=20, d=6, D=2, seed=3)
    run = {"reg": "l2", "T": 6, "epsilon": 0.5, "delta": 1e-5, "lam_n": 1e-3}
    h_sum = sgd.dpsgd(data, rngs=repeat_generators(0, 2, "c"), lr=0.02, convention="sum", **run)
    h_avg = sgd.dpsgd(data, rngs=repeat_generators(0, 2, "c"), lr=0.1, convention="average", **run)
    np.testing.assert_allclose(h_sum.meta["w"], h_avg.meta["w"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h_sum.traces["el"], h_avg.traces["el"], rtol=1e-12)
    h_def = sgd.dpsgd(data, rngs=repeat_generators(0, 2, "c"), lr=0.02, **run)
    np.testing.assert_array_equal(h_def.meta["w"], h_sum.meta["w"])
    assert sgd.CONVENTIONS[0] == "sum"


@pytest.mark.parametrize("D,R", [(1, 3), (2, 2)])
@pytest.mark.parametrize("convention", ["sum", "average"])
def test_dpsgd_lanes_equal_one_run_per_learning_rate(D, R, convention):
    """Learning rates as lanes of one run (shared data sweeps, each repeat's noise drawn once per iteration for all
    lanes) give each lane's w^T bit for bit as its own run with fresh Generators of the same seeds; with and without
    noise, clipping active (clip below the row norms)."""
    _, _, data = star_problem(n=4, m=30, d=6, D=D)
    lrs = [0.01, 0.03, 0.1, 0.3, 1.0]   # a group of four lanes and one more (the lane kernels)
    for noise, clip in (({"noise_multiplier": 2.0}, 0.3), ({"sigma_value": 0.0}, 0.3), ({"noise_multiplier": 2.0},
                                                                                          hb.C1)):
        lanes = sgd.dpsgd_lanes(data, reg="l2", T=6, rngs=repeat_generators(3, R, "lanes"), lrs=lrs, clip=clip,
                                convention=convention, lam_n=1e-3, **noise)
        assert lanes.shape == (5, R, 6)
        for lane, lr in enumerate(lrs):
            one = sgd.dpsgd(data, reg="l2", T=6, rngs=repeat_generators(3, R, "lanes"), lr=lr, clip=clip,
                            convention=convention, lam_n=1e-3, record=False, **noise).meta["w"]
            np.testing.assert_array_equal(lanes[lane], one)
        assert not np.array_equal(lanes[0], lanes[4])
