"""mechanisms.huang2019: HUANG's DP-ADMM, PVP, DVP and DPSGD steps as mechanisms: calibration (against the
frontier's values before the mechanisms existed), the Spend of the noise a run used, seeded releases, the one-step
audit case and the one-run canaries and scores."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.algorithms import sgd
from repro_dpadmm.mechanisms import huang2019 as mh
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.audit.canaries import gradient_canary
from repro_dpadmm.privacy.bounds import huang2019 as hb
from repro_dpadmm.privacy.spend import REPLACE_ONE, pure_epsilons, totals
from repro_dpadmm.rng import repeat_generators, stacked_normal

from _audit_synth import sparse_rows

DELTA, T = 1e-5, 100


def _star(R=2, n=3, m=40, d=6, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, m, d))
    A /= np.maximum(1.0, np.linalg.norm(A, axis=-1))[..., None]
    b = np.where(A @ rng.standard_normal(d) > 0, 1.0, -1.0)
    return cs.star_from_rows(sp.csr_matrix(A.reshape(-1, d)), b.ravel(),
                             np.broadcast_to(np.arange(n * m).reshape(n, m), (R, n, m)))


def _multiplier(spend) -> float:
    return spend.event.event.noise_multiplier   # SelfComposedDpEvent(GaussianDpEvent(z), T)


# ------------------------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("mech, level, z", [(mh.DpAdmm(), 1.0, 37.30631634818273),
                                            (mh.Pvp(), 0.3, 112.38044464524889)])
def test_gaussian_calibration_is_the_frontiers(mech, level, z):
    """z by dp-accounting's PLD at T = 100, delta = 1e-5 (the values the frontier computed before the mechanisms);
    the paper's own total of that z is the moments accountant eps-bar, the RDP total dp-accounting's."""
    cal = mech.calibrate(level, DELTA, T)
    # rel 1e-12: far above the last bits a calibration takes from the processor's math paths, far below anything
    # that matters (the bisection's own tolerance is 1e-3 of the level)
    assert cal["z"] == cal["noise"] == pytest.approx(z, rel=1e-12)
    assert (1 - 2e-3) * level <= cal["tight_eps"] <= level
    assert cal["paper_eps"] == hb.eps_bar(T=T, z=cal["z"], total_delta=DELTA) > level
    assert cal["rdp_eps"] == accounting.rdp_epsilon(z, DELTA, steps=T)


@pytest.mark.parametrize("level", [0.1, 0.3, 1.0, 3.0])
def test_bisection_meets_each_level_within_one_percent(level):
    """At paper scale, every level: tight epsilon in [0.99 level, level], re-computed independently of the solver."""
    for mech in (mh.DpAdmm(), mh.Dvp()):
        cal = mech.calibrate(level, DELTA, T)
        assert 0 <= (level - cal["tight_eps"]) / level <= 0.01
        if mech.kind == "gaussian":
            again = accounting.pld_epsilon(cal["z"], DELTA, steps=T, discretization=2e-5 * level)
        else:
            again = accounting.pure_composed_epsilon(np.full(T, cal["eps_iter"]), DELTA,
                                                     discretization=cal["eps_iter"] * 2e-4)
        assert 0.985 * level <= again <= level * 1.001, (mech.label, level, again)


def test_dvp_calibration_and_its_paper_total():
    cal = mh.Dvp().calibrate(1.0, DELTA, T)
    assert cal["eps_iter"] == pytest.approx(0.02701193488200021, rel=1e-12)  # the frontier's value before the mechanisms
    assert cal["paper_eps"] == T * cal["eps_iter"]         # basic composition, docs/choices.md#huang-total-privacy
    basic = mh.Dvp().calibrate(1.0, DELTA, T, how="basic")
    assert basic["eps_iter"] == pytest.approx(1.0 / T) and basic["eps_iter"] < cal["eps_iter"]


# ------------------------------------------------------------------------------------------------- spend
def test_dpadmm_spend_multiplier_is_sigma_over_sensitivity_of_the_run():
    data, z, T_ = _star(), 2.5, 5
    mech = mh.DpAdmm()
    h = cs.dpadmm(data, reg="l2", T=T_, rngs=repeat_generators(0, 2, "t"), noise_multiplier=z, rho=mech.rho,
                  lam_n=mech.lam_n, record=False)
    ratio = h.meta["sigma"] / hb.sensitivity(data.m, mech.rho, h.meta["eta"])   # sigma_{i,k} / Delta_{i,k}, every k
    spend = mech.spend(T_, DELTA, z=z)
    np.testing.assert_allclose(ratio, _multiplier(spend), rtol=1e-12)
    assert spend.event.count == T_ and spend.neighbouring == REPLACE_ONE
    out = totals(spend, DELTA, pld=False)
    assert out["paper_eps"] == hb.eps_bar(T=T_, z=z, total_delta=DELTA)
    assert out["rdp_eps"] == accounting.rdp_epsilon(z, DELTA, steps=T_)


def test_pvp_and_dpsgd_multipliers_are_sigma_over_their_sensitivities():
    data, z = _star(), 3.0
    pvp = cs.pvp(data, T=2, rngs=repeat_generators(0, 2, "p"), noise_multiplier=z, rho=0.1, lam_n=1e-6,
                 record=False)
    assert pvp.meta["sigma"] / (2 * hb.C1 / ((1e-6 + 0.1) * data.m)) == pytest.approx(
        _multiplier(mh.Pvp().spend(2, DELTA, z=z)), rel=1e-12)
    dpsgd = sgd.dpsgd(data, reg="l2", T=2, rngs=repeat_generators(0, 2, "s"), noise_multiplier=z, record=False)
    assert dpsgd.meta["sigma"] / (2 * hb.C1 / data.m) == pytest.approx(
        _multiplier(mh.DpSgd().spend(2, DELTA, z=z)), rel=1e-12)


def test_dvp_spend_is_t_pure_steps():
    spend = mh.Dvp().spend(7, DELTA, eps_iter=0.2)
    np.testing.assert_allclose(pure_epsilons(spend.event), 0.2, rtol=1e-12)
    assert len(pure_epsilons(spend.event)) == 7
    assert totals(spend, DELTA, pld=False)["paper_eps"] == 7 * 0.2


# ------------------------------------------------------------------------------------------------- runs
@pytest.mark.parametrize("mech, cal", [(mh.DpAdmm(), {"z": 2.0}), (mh.Pvp(), {"z": 2.0}),
                                       (mh.DpSgd(), {"z": 2.0}), (mh.Dvp(), {"eps_iter": 0.5})])
def test_release_is_seeded(mech, cal):
    data = _star()
    run = lambda seed, **kw: mech.run(data, cal, 3, repeat_generators(seed, 2, "r"), **kw)  # noqa: E731
    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert a.shape[:2] == ((2, 1) if isinstance(mech, mh.DpSgd) else (2, data.n))
    quiet = run(1, noiseless=True)
    np.testing.assert_array_equal(quiet, run(2, noiseless=True))   # no draw reaches a noise-free run
    assert not np.allclose(quiet, a)


# ------------------------------------------------------------------------------------------------- audit case
def _canary(m=50):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((200, 8))
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    return gradient_canary(X, y, m, state_norm=400.0, offset=0.05, rng=np.random.default_rng(0))


def test_audit_cases_reach_the_sensitivity_bound_at_the_classic_calibration():
    canary = _canary()
    for case in (mh.DpAdmm().audit_case(canary, 1.0, DELTA), mh.DpSgd().audit_case(canary, 1.0, DELTA)):
        assert case.pair_distance <= case.sensitivity * (1 + 1e-12)
        assert case.pair_distance / case.sensitivity > 0.99
        assert case.sigma / case.sensitivity == pytest.approx(np.sqrt(2 * np.log(1.25 / DELTA)), rel=1e-12)
        out = [case.step(b, 1.0, repeat_generators(3, 4, "c")) for b in (0, 1)]
        assert out[0].shape == (4, 8) and not np.allclose(out[0], out[1])


# ------------------------------------------------------------------------------------------------- one run
def _rows(N=1200, d=12, seed=0):
    return sparse_rows(N, d, seed)


HP = {"agents": 4, "rows_per_agent": 60, "canaries": 5, "runs": 2}


def _setup(norm=1.0, seed=0):
    X, y = _rows()
    return mh.one_run_canaries(X, y, **HP, canary_norm=norm, rows_rng=np.random.default_rng(seed),
                               signs_rng=np.random.default_rng(seed + 100))


def test_canaries_sit_on_the_least_used_coordinates_and_differ_only_in_the_label():
    st = _setup()
    assert {9, 10, 11} <= set(st.coords.tolist()) and len(st.coords) == 5
    Xs, b = st.data.training_rows()
    Xp, bp = st.plus.training_rows()
    assert (Xs != Xp).nnz == 0
    canary_labels = b.reshape(2, 4, 60)[:, :, -5:]
    assert np.array_equal(canary_labels, st.S) and np.all(bp.reshape(2, 4, 60)[:, :, -5:] == 1)


def test_stepping_dpadmm_one_call_per_iteration_is_the_same_run():
    st = _setup()
    T_, z = 6, 3.0
    eta = hb.eta_schedule("l2", T_, st.m, z=z, lam_n=1e-6, d=st.data.d)
    whole = cs.dpadmm(st.data, reg="l2", T=T_, rngs=repeat_generators(1, 2, "x"), noise_multiplier=z, eta=eta,
                      record=False)
    state = None
    rngs = repeat_generators(1, 2, "x")
    for t in range(T_):
        h = cs.dpadmm(st.data, reg="l2", T=1, rngs=rngs, noise_multiplier=z, eta=eta[t:t + 1], record=False,
                      init=state)
        state = {k: h.meta[k] for k in ("w_tilde", "w", "gamma")}
    np.testing.assert_allclose(state["w_tilde"], whole.meta["w_tilde"], rtol=1e-12, atol=1e-12)


def test_dpsgd_message_loop_is_the_librarys_run():
    st = _setup(5.0)
    T_, z = 5, 2.0
    whole = sgd.dpsgd(st.data, reg="l2", T=T_, rngs=repeat_generators(2, 2, "x"), noise_multiplier=z, record=False)
    rngs = repeat_generators(2, 2, "x")
    w = np.zeros((2, st.data.d))
    for _ in range(T_):
        g = sgd.local_gradients(st.data, w) + stacked_normal(rngs, (4, st.data.d), float(sgd.sigma(st.m, z=z)))
        w = sgd.update(w, g, lr=0.1, lam_n=1e-6, reg="l2")
    np.testing.assert_allclose(w, whole.meta["w"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mech, norm, multiplier", [(mh.DpAdmm(), 1.0, 2 * 2.0 * 1e-9), (mh.DpSgd(), 5.0, 2.0 * 1e-9)])
def test_without_noise_the_score_isolates_each_canary_exactly(mech, norm, multiplier):
    # With (almost) no noise the residual is the canaries' known gap alone: score 0 for S = +1, -T for S = -1,
    # whatever the state (the pair's gradient gap is state-independent; orthogonal canaries do not interfere).
    st = _setup(norm, seed=3)
    out = mech.one_run(st, 8, 2.0, 1e-9, repeat_generators(0, 2, "x"))
    np.testing.assert_allclose(out.scores, np.where(st.S > 0, 0.0, -8), atol=1e-5)
    assert out.multiplier == multiplier and out.extras == {}


def _white_box(seed=0):
    X, y = _rows()
    return mh.white_box_canaries(X, y, agents=4, rows_per_agent=60, canaries=5, runs=2,
                                 rows_rng=np.random.default_rng(seed), signs_rng=np.random.default_rng(seed + 100))


@pytest.mark.parametrize("mech", [mh.DpAdmm(), mh.DpSgd(convention="average")])
def test_white_box_canaries_move_the_release_by_the_full_bound(mech):
    # Without noise the score is S exactly at every step (the two states 2 c_1 / m (rho + 1/eta) apart for DP-ADMM,
    # 2C/m for DPSGD: the sensitivity), whatever the state; with noise of multiplier z its spread is 2 z per step.
    st = _white_box(3)
    assert np.all(st.data.row_norms.reshape(2, 4, 60)[:, :, -5:] == 0)        # the canary slots are empty records
    quiet = mech.one_run_white_box(st, 8, 2.0, 1e-9, repeat_generators(0, 2, "x"))
    np.testing.assert_allclose(quiet.scores, 8 * st.S, atol=1e-5)
    assert quiet.multiplier == pytest.approx(2e-9)
    noisy = mech.one_run_white_box(st, 8, 2.0, 1.0, repeat_generators(0, 2, "x"))
    assert np.std(noisy.scores - 8 * st.S) == pytest.approx(2 * 2.0 * np.sqrt(8), rel=0.25)


def test_white_box_dpadmm_loop_is_the_librarys_run_when_nothing_is_inserted():
    # with every inserted gradient zero (S = 0) the white-box loop is consensus.dpadmm's, draw for draw: its score is
    # minus the record-level score, which steps the library's own dpadmm (the empty canary slots change nothing)
    st = _white_box()
    st.S = np.zeros_like(st.S)
    T_, z = 5, 3.0
    wb = mh.DpAdmm().one_run_white_box(st, T_, z, 1.0, repeat_generators(1, 2, "x"))
    lib = mh.DpAdmm().one_run(st, T_, z, 1.0, repeat_generators(1, 2, "x"))
    np.testing.assert_allclose(wb.scores, -lib.scores, rtol=1e-9, atol=1e-9)
    assert np.std(wb.scores) > 1


def test_claims_are_the_papers_and_the_exact_totals():
    mech = mh.DpAdmm()
    c = mech.paper_claim(0.1, 1e-4, 10)
    assert c.noise == hb.noise_multiplier(0.1, 1e-4) and c.delta == 1e-4 and c.paper_delta is None
    assert c.paper_eps == hb.eps_bar(z=c.noise, T=10, total_delta=1e-4)
    assert c.tight_eps == accounting.analytic_gaussian_epsilon(c.noise, 1e-4, steps=10) < c.paper_eps
    lev = mech.level_claim(1.0, DELTA, 10)
    assert lev.tight_eps == pytest.approx(1.0, rel=1e-6)
