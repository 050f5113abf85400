"""beyond/audit_run: the one-run bound (privacy.one_run_audit) and the whole-run audit's canaries and scores."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.algorithms import sgd
from repro_dpadmm.experiments import beyond_audit_run as ex
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy import one_run_audit as ora
from repro_dpadmm.rng import repeat_generators


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


# ------------------------------------------------------------------------------------------------- canaries, scores
def _rows(N=1200, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((N, d)) * (rng.random((N, d)) < 0.4)
    X[:, -3:] *= 0.05                                 # three barely used coordinates
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.standard_normal(d) > 0, 1.0, -1.0)
    return sp.csr_matrix(X), y


HP = {"agents": 4, "rows_per_agent": 60, "canaries_per_agent": 5, "runs": 2, "reg": "l2", "rho": 0.1,
      "lam_n": 1e-6, "lr": 0.1, "paper_epsilons": [0.2], "paper_delta": 1e-4}


def test_canaries_sit_on_the_least_used_coordinates_and_differ_only_in_the_label():
    X, y = _rows()
    st = ex.huang_setup(X, y, HP, 0, 1.0, "t")
    assert {9, 10, 11} <= set(st.coords.tolist()) and len(st.coords) == 5
    Xs, b = st.data.training_rows()
    Xp, bp = st.plus.training_rows()
    assert (Xs != Xp).nnz == 0
    canary_labels = b.reshape(2, 4, 60)[:, :, -5:]
    assert np.array_equal(canary_labels, st.S) and np.all(bp.reshape(2, 4, 60)[:, :, -5:] == 1)


def test_stepping_dpadmm_one_call_per_iteration_is_the_same_run():
    X, y = _rows()
    st = ex.huang_setup(X, y, HP, 0, 1.0, "t")
    T, z = 6, 3.0
    eta = ex.hb.eta_schedule("l2", T, st.m, z=z, lam_n=1e-6, d=st.data.d)
    whole = cs.dpadmm(st.data, reg="l2", T=T, rngs=repeat_generators(1, 2, "x"), noise_multiplier=z, eta=eta,
                      record=False)
    state = None
    rngs = repeat_generators(1, 2, "x")
    for t in range(T):
        h = cs.dpadmm(st.data, reg="l2", T=1, rngs=rngs, noise_multiplier=z, eta=eta[t:t + 1], record=False,
                      init=state)
        state = {k: h.meta[k] for k in ("w_tilde", "w", "gamma")}
    np.testing.assert_allclose(state["w_tilde"], whole.meta["w_tilde"], rtol=1e-12, atol=1e-12)


def test_dpsgd_message_loop_is_the_librarys_run():
    X, y = _rows()
    st = ex.huang_setup(X, y, HP, 0, 5.0, "t")
    T, z = 5, 2.0
    whole = sgd.dpsgd(st.data, reg="l2", T=T, rngs=repeat_generators(2, 2, "x"), noise_multiplier=z, record=False)
    rngs = repeat_generators(2, 2, "x")
    w = np.zeros((2, st.data.d))
    for _ in range(T):
        g = sgd.local_gradients(st.data, w) + ex.stacked_normal(rngs, (4, st.data.d), float(sgd.sigma(st.m, z=z)))
        w = sgd.update(w, g, lr=0.1, lam_n=1e-6, reg="l2")
    np.testing.assert_allclose(w, whole.meta["w"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method", ["dpadmm", "dpsgd"])
def test_without_noise_the_score_isolates_each_canary_exactly(method):
    # With (almost) no noise the residual is the canaries' known gap alone: score 0 for S = +1, -T for S = -1,
    # whatever the state (the pair's gradient gap is state-independent; orthogonal canaries do not interfere).
    X, y = _rows()
    T = 8
    st = ex.huang_setup(X, y, HP, 3, 1.0 if method == "dpadmm" else 5.0, "t")
    rngs = repeat_generators(0, 2, "x")
    fn = ex.huang_dpadmm_scores if method == "dpadmm" else ex.huang_dpsgd_scores
    score = fn(st, HP, T, 2.0, 1e-9, rngs)
    np.testing.assert_allclose(score, np.where(st.S > 0, 0.0, -T), atol=1e-5)


def test_xu_score_isolates_each_canary_without_noise():
    X, y = _rows(N=800, d=10)
    xp = {"rows": 300, "canaries": 4, "runs": 3, "rho": 1.0, "gamma": 1.0, "lam": 1e-5, "mu": 0.5, "c": 1.0,
          "u0": "zero", "graph": {"alphas": [0.5, 0.3, 0.2, 0.1], "tol": 1e-3, "max_iter": 100}}
    st = ex.xu_setup(X, y, xp, 0)
    score = ex.xu_scores(st, xp, 6, 1e-12, repeat_generators(0, 3, "x"))
    np.testing.assert_allclose(score, np.where(st.S > 0, 0.0, -6.0), atol=1e-4)


SMALL = {"iterations": 4, "confidence": 0.95, "control_noise_factor": 0.25, "levels": [3.0], "level_delta": 1e-5,
         "huang2019": HP,
         "xu2020": {"rows": 300, "canaries": 4, "runs": 3, "rho": 1.0, "gamma": 1.0, "lam": 1e-5, "mu": 0.5,
                    "c": 1.0, "u0": "paper", "paper_epsilons": [0.1], "paper_delta": 1e-3,
                    "graph": {"alphas": [0.5, 0.3, 0.2, 0.1], "tol": 1e-3, "max_iter": 100}}}


def test_same_seed_same_numbers_other_seed_other_numbers():
    X, y = _rows()
    data = {"adult_huang2019": (X, y), "a9a": _rows(N=400, d=12)}
    params = {**SMALL, "hu2020": HU}
    a = ex.metrics(ex.run(params, 5, data), params)
    b = ex.metrics(ex.run(params, 5, data), params)
    c = ex.metrics(ex.run(params, 6, data), params)
    strip = lambda m: {k: v for k, v in m.items() if "seconds" not in k}  # noqa: E731
    assert strip(a) == strip(b)
    assert any(a[k] != c[k] for k in a if k.endswith("correct"))
    assert {"huang_dpadmm.paper_eps0.2.eps_lo", "huang_dpsgd.level_eps3.control.eps_lo",
            "xu_dpadmm.paper_eps0.1.canary_eps", "hu_sharing.level_eps3.noisy_b1"} <= set(a)


def test_bad_settings_fail_before_any_work():
    with pytest.raises(ValueError, match="paper_epsilons"):
        ex.check_params({**SMALL, "huang2019": {**HP, "paper_epsilons": [2.0]}})
    with pytest.raises(ValueError, match="control_noise_factor"):
        ex.check_params({**SMALL, "control_noise_factor": 1.5})
    with pytest.raises(ValueError, match="canaries_per_agent"):
        ex.check_params({**SMALL, "huang2019": {**HP, "canaries_per_agent": 60}})


HU = {"rows": 200, "canaries": 6, "runs": 2, "boundaries": [0, 7, 12], "rho": 1.0, "lam": 1e-3, "c1": 2.0,
      "iterations_b1": 5, "paper_epsilons": [3.0], "paper_delta": 0.01, "delta_prime": 1e-5}


def test_hu_canaries_are_feature_level_neighbours_with_unit_rows():
    X, y = _rows(N=400, d=12)
    st = ex.hu_setup(X, y, HU, 0)
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
    X, y = _rows(N=400, d=12)
    st = ex.hu_setup(X, y, HU, 1)
    score, energy, _ = ex.hu_scores(st, 6, np.array([1e-9, 1e-9]), repeat_generators(0, 2, "x"))
    # noise-free: score = +sum ||Delta||^2 / 2 for S = +1 and -sum ||Delta||^2 / 2 for S = -1 (the residual is exactly
    # Delta_j for a canary in state -1, 0 otherwise)
    np.testing.assert_allclose(score, st.S * energy / 2, rtol=1e-6, atol=1e-9)
    assert np.all(energy > 0)
