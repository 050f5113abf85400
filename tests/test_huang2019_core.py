"""Huang et al. 2019 (DP-ADMM): schedules and noise of SPEC §2.2.3, eps-bar of §2.4, the star-network algorithms
(ADMM, PVP, DVP, DP-ADMM, DPSGD) and the centralised optimum, on small synthetic problems."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from repro_dpadmm.algorithms import centralized as ce
from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.algorithms import sgd
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.bounds import huang2019 as hb
from repro_dpadmm.privacy.mechanisms import gamma_norm
from repro_dpadmm.problems.logistic import loss
from repro_dpadmm.rng import repeat_generators

# SPEC §2.2.3 check table: n = 100, m_i = 400, rho = 0.1; (eps, delta): eta/sigma at k = 1, 10, 100 (l1, l2), PVP sigma
TABLE = [
    (0.01, 1e-3, [(0.8434, 1.4687), (0.2667, 0.4905), (0.0843, 0.1579)],
     [(1.7986, 2.8785), (0.8213, 1.4331), (0.3021, 0.5538)], 18.882),
    (0.01, 1e-6, [(0.6015, 1.5032), (0.1902, 0.4946), (0.0602, 0.1584)],
     [(1.4720, 3.3996), (0.6220, 1.5515), (0.2201, 0.5706)], 26.494),
    (0.05, 1e-3, [(4.0873, 1.0957), (1.2925, 0.4323), (0.4087, 0.1483)],
     [(3.2134, 0.9184), (2.2547, 0.6948), (1.1601, 0.3926)], 3.7764),
    (0.1, 1e-3, [(7.4953, 0.8090), (2.3702, 0.3618), (0.7495, 0.1317)],
     [(3.5638, 0.4961), (2.8838, 0.4227), (1.7986, 0.2878)], 1.8882),
    (0.1, 1e-6, [(5.6451, 0.9560), (1.7851, 0.4013), (0.5645, 0.1416)],
     [(3.4137, 0.6743), (2.5922, 0.5454), (1.4720, 0.3400)], 2.6494),
    (0.2, 1e-3, [(11.716, 0.5094), (3.7048, 0.2552), (1.1716, 0.0990)],
     [(3.7693, 0.2585), (3.3514, 0.2370), (2.4814, 0.1877)], 0.9441),
]


def _close(value, table_value):
    """Equal to the table's printed digits: 1e-4 absolute (the table's resolution; 5 significant digits above 10)."""
    return abs(value - table_value) <= max(1e-4, 6e-5 * abs(table_value))


@pytest.mark.parametrize("eps, delta, l1, l2, pvp", TABLE)
def test_eta_sigma_table_spec_2_2_3(eps, delta, l1, l2, pvp):
    for reg, expected in (("l1", l1), ("l2", l2)):
        eta = hb.eta_schedule(reg, 100, 400, eps, delta)
        sig = hb.sigma(400, 0.1, eta, eps, delta)
        for k, (e_eta, e_sig) in zip((1, 10, 100), expected):
            assert _close(eta[k - 1], e_eta), (reg, k, eta[k - 1], e_eta)
            assert _close(sig[k - 1], e_sig), (reg, k, sig[k - 1], e_sig)
    assert _close(hb.pvp_sigma(400, 0.1, 1e-6, eps, delta), pvp)


def test_plugged_in_forms_of_the_paper():
    """§VI-E/F plugged-in formulas (the l1 one with the paper's extra 1/n, negligible) against eqs. (29)/(34)."""
    k, m, eps, delta, n = np.arange(1, 101), 400, 0.05, 1e-5, 100
    L = np.log(1.25 / delta)
    l1 = 23 * (2 * k * (1 + 1e-6 * np.sqrt(104) / n) ** 2 + 1664 * k * L / (m ** 2 * eps ** 2)) ** -0.5
    l2 = 1 / (0.25 + 1e-6 + 2 * np.sqrt(416 * k * L) / (89 * m * eps))
    assert np.allclose(hb.eta_schedule("l1", 100, m, eps, delta), l1, rtol=1e-5)
    assert np.allclose(hb.eta_schedule("l2", 100, m, eps, delta), l2, rtol=1e-12)
    # the noise multiplier is the same at every k and the z form equals the (eps, delta) form
    z = hb.noise_multiplier(eps, delta)
    eta = hb.eta_schedule("l2", 100, m, z=z)
    assert np.allclose(hb.sigma(m, 0.1, eta, eps, delta) / hb.sensitivity(m, 0.1, eta), z)
    assert np.allclose(eta, l2, rtol=1e-12)


EPS_BAR = {  # SPEC §2.4: delta -> eps -> (continuous lambda, integer lambda <= 32)
    1e-3: [(0.0988, 0.2274), (0.5009, 0.5009), (1.0193, 1.0193), (2.1087, 2.1087)],
    1e-4: [(0.0991, 0.2966), (0.5007, 0.5065), (1.0146, 1.0148), (2.0822, 2.0834)],
    1e-5: [(0.0993, 0.3668), (0.5005, 0.5355), (1.0117, 1.0118), (2.0661, 2.0671)],
    1e-6: [(0.0994, 0.4376), (0.5005, 0.5787), (1.0098, 1.0098), (2.0553, 2.0553)],
}


@pytest.mark.parametrize("delta", sorted(EPS_BAR))
def test_eps_bar_table_spec_2_4(delta):
    for eps, (cont, integer) in zip((0.01, 0.05, 0.1, 0.2), EPS_BAR[delta]):
        assert abs(hb.eps_bar(eps, delta, 100) - cont) < 1e-4
        assert abs(hb.eps_bar(eps, delta, 100, integer_orders=True) - integer) < 1e-4


def test_accountant_table_orders_paper_rdp_pld():
    t = hb.accountant_table(0.1, 1e-5, 100)
    assert abs(t["pld_eps"] - 0.751) < 2e-3 and abs(t["rdp_eps"] - 0.822) < 2e-3  # TOOLCHAIN.md reference values
    assert t["pld_eps"] < t["rdp_eps"] < t["paper_eps"]


def test_dvp_calibration_both_branches():
    small = hb.dvp_calibration(0.01, 400, 1e-6, 0.1)  # eps' = 0.01 - 2 ln(1.00625) < 0
    assert small["eps_prime"] == 0.005 and np.isclose(small["Delta"], 0.25 / (400 * np.expm1(0.0025)) - 0.100001)
    big = hb.dvp_calibration(0.1, 400, 1e-6, 0.1)
    assert big["Delta"] == 0 and np.isclose(big["eps_prime"], 0.1 - 2 * np.log1p(0.25 / (400 * 0.100001)))
    assert np.isclose(big["alpha"], big["eps_prime"] / 2)


def test_gamma_norm_mean_norm():
    """DVP's noise: E||b|| = d / alpha within 1% (10^5 draws)."""
    alpha = hb.dvp_calibration(0.1, 400, 1e-6, 0.1)["alpha"]
    r = np.linalg.norm(gamma_norm(np.random.default_rng(3), 104, alpha, size=(100_000,)), axis=-1)
    assert abs(r.mean() / (104 / alpha) - 1) < 0.01


# --------------------------------------------------------------------------------------------------- algorithms
def _problem(n=4, m=30, d=6, D=1, seed=0, test=60):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((D, n, m, d))
    A /= np.maximum(1.0, np.linalg.norm(A, axis=-1))[..., None]
    w = rng.standard_normal(d) * 2
    b = np.where(A @ w + 0.5 * rng.standard_normal((D, n, m)) > 0, 1.0, -1.0)
    Xt = rng.standard_normal((D, test, d))
    Xt /= np.maximum(1.0, np.linalg.norm(Xt, axis=-1))[..., None]
    yt = np.where(Xt @ w > 0, 1.0, -1.0)
    return A, b, cs.star_data(A, b, Xt, yt)


def _objective_grad(A, b, lam_n, w):
    """grad of sum_i f_i(w) with R = ||w||^2/2, dense, per data draw 0."""
    z = b * (A @ w)
    s = 1.0 / (1.0 + np.exp(z))
    return (-(b * s)[..., None] * A).mean(axis=-2).sum(axis=-2) + A.shape[-3] * lam_n * w


def test_star_data_products_match_dense():
    A, b, data = _problem(D=2)
    w = np.random.default_rng(1).standard_normal((2, 4, 6))
    assert np.allclose(data.product(w), np.einsum("rnmd,rnd->rnm", A, w))
    u = np.random.default_rng(2).standard_normal((2, 4, 30))
    assert np.allclose(data.tproduct(u), np.einsum("rnm,rnmd->rnd", u, A))
    # one shared draw for three repeats
    A1, b1, d1 = _problem(D=1)
    w3 = np.random.default_rng(3).standard_normal((3, 4, 6))
    assert np.allclose(d1.product(w3), np.einsum("nmd,rnd->rnm", A1[0], w3))
    assert np.allclose(d1.mean_loss(w3), loss(b1[0] * np.einsum("nmd,rnd->rnm", A1[0], w3)).mean(-1))


def test_admm_l2_reaches_centralised_optimum():
    A, b, data = _problem(n=4, m=40, d=5)
    lam_n, rho = 0.01, 0.5
    Xall, yall = A[0].reshape(-1, 5), b[0].reshape(-1)
    w_star = ce.solve(Xall, yall, "l2", lam_n)
    assert np.linalg.norm(_objective_grad(A[0], b[0], lam_n, w_star)) < 1e-8
    h = cs.admm(data, reg="l2", T=300, rho=rho, lam_n=lam_n)
    assert np.abs(h.meta["w"][0] - w_star).max() < 1e-6
    assert np.abs(h.meta["w_local"][0] - w_star).max() < 1e-6
    assert h.meta["inner_residual_max"] < 1e-8


def test_admm_l1_reaches_centralised_optimum():
    A, b, data = _problem(n=3, m=40, d=5, seed=4)
    lam_n, rho = 0.02, 0.5
    w_star = ce.solve(A[0].reshape(-1, 5), b[0].reshape(-1), "l1", lam_n)
    h = cs.admm(data, reg="l1", T=1500, rho=rho, lam_n=lam_n)
    assert np.abs(h.meta["w"][0] - w_star).max() < 1e-6
    # the centralised l1 optimum against a direct scipy solve of the same objective
    Xall, yall = A[0].reshape(-1, 5), b[0].reshape(-1)
    ref = scipy.optimize.minimize(lambda w: ce.objective(Xall, yall, w, "l1", lam_n), w_star + 0.1,
                                  method="Powell", options={"xtol": 1e-10, "ftol": 1e-14, "maxiter": 100_000})
    assert ce.objective(Xall, yall, w_star, "l1", lam_n) <= ref.fun + 1e-9
    # proximal Newton (default) and plain L-BFGS-B on w = u - v (SPEC §2.2.6) reach the same optimum
    w_plain = ce.solve(Xall, yall, "l1", lam_n, method="lbfgsb")
    assert abs(ce.objective(Xall, yall, w_plain, "l1", lam_n) - ce.objective(Xall, yall, w_star, "l1", lam_n)) < 1e-12
    assert np.abs(w_plain - w_star).max() < 1e-5


def test_local_solves_are_exact():
    A, b, data = _problem(n=3, m=25, d=4, seed=2)
    rng = np.random.default_rng(5)
    lin, center = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 4))
    w, _, res = cs.solve_local_l2(data, np.zeros((1, 3, 4)), lin, center, quad=0.01, rho=0.1)
    for i in range(3):  # the optimality condition, written out densely for each agent
        v = w[0, i]
        s = 1.0 / (1.0 + np.exp(b[0, i] * (A[0, i] @ v)))
        grad = (-(b[0, i] * s)[:, None] * A[0, i]).mean(0) + 0.01 * v - lin[0, i] + 0.1 * (v - center[0])
        assert np.linalg.norm(grad) < 1e-8
    assert res < 1e-8
    w1, _, _ = cs.solve_local_l1(data, np.zeros((1, 3, 4)), lin, center, lam_n=0.05, rho=0.1)
    for i in range(3):
        def phi1(v, i=i):
            return (loss(b[0, i] * (A[0, i] @ v)).mean() + 0.05 * np.abs(v).sum() - lin[0, i] @ v
                    + 0.05 * np.sum((v - center[0]) ** 2))
        assert phi1(w1[0, i]) <= min(phi1(w1[0, i] + 1e-4 * e) for e in np.vstack([np.eye(4), -np.eye(4)])) + 1e-12


def _loop_dpadmm(A, b, reg, T, eta, rho, lam_n):
    """Eqs. (38)/(39) written out with explicit loops over agents (no noise), one data draw."""
    n, m, d = A.shape
    wt = np.zeros((n, d))
    w = np.zeros(d)
    gam = np.zeros((n, d))
    for k in range(1, T + 1):
        new = np.zeros((n, d))
        for i in range(n):
            s = sum(b[i, j] * A[i, j] / (1 + np.exp(b[i, j] * wt[i] @ A[i, j])) for j in range(m)) / m
            reg_term = np.sign(wt[i]) if reg == "l1" else wt[i]
            new[i] = (s - lam_n * reg_term + gam[i] + rho * w + wt[i] / eta[k - 1]) / (rho + 1 / eta[k - 1])
        wt = new  # (38b)/(39b) with zero noise
        w = wt.mean(0) - gam.mean(0) / rho  # (38c)
        gam = gam - rho * (wt - w)  # (38d)
    return wt, w, gam


@pytest.mark.parametrize("reg", ["l1", "l2"])
def test_dpadmm_without_noise_matches_a_direct_loop(reg):
    A, b, data = _problem(n=3, m=12, d=4, seed=7)
    T, rho, lam_n, z = 8, 0.1, 1e-3, hb.noise_multiplier(0.1, 1e-4)
    h = cs.dpadmm(data, reg=reg, T=T, noise_multiplier=z, rho=rho, lam_n=lam_n, add_noise=False)
    eta = hb.eta_schedule(reg, T, 12, z=z, lam_n=lam_n, d=4)
    wt, w, gam = _loop_dpadmm(A[0], b[0], reg, T, eta, rho, lam_n)
    assert np.allclose(h.meta["w_tilde"][0], wt, atol=1e-12)
    assert np.allclose(h.meta["w"][0], w, atol=1e-12) and np.allclose(h.meta["gamma"][0], gam, atol=1e-12)
    assert np.allclose(h.meta["eta"], eta)


def test_dpadmm_noise_level_and_single_step_api():
    A, b, data = _problem(n=50, m=20, d=8, seed=1)
    rngs = repeat_generators(0, 2, "t")
    h = cs.dpadmm(data, reg="l2", T=1, rngs=rngs, epsilon=0.1, delta=1e-4, lam_n=1e-3, record=False)
    zero = np.zeros((2, 50, 8))
    w_clean = cs.dpadmm_primal_update(data, zero, np.zeros((2, 8)), zero, h.meta["eta"][0], lam_n=1e-3, reg="l2")
    xi = h.meta["w_tilde"] - w_clean
    sig = hb.sigma(20, 0.1, h.meta["eta"][0], 0.1, 1e-4)
    assert np.isclose(h.meta["sigma"][0], sig)
    assert abs(xi.std() / sig - 1) < 0.05  # 800 draws
    assert h.meta["train_time_s"] is not None


def test_same_seed_same_result_and_repeats_independent():
    A, b, data = _problem(n=4, m=20, d=5, seed=3)
    run = lambda rngs: cs.dpadmm(data, reg="l2", T=5, rngs=rngs, epsilon=0.1, delta=1e-4)  # noqa: E731
    h1, h2 = run(repeat_generators(11, 3, "x")), run(repeat_generators(11, 3, "x"))
    for k in h1.traces:
        assert np.array_equal(h1.traces[k], h2.traces[k], equal_nan=True)
    # repeat r depends only on its own generator: rerunning repeat 2 alone gives the same iterates
    alone = run([repeat_generators(11, 3, "x")[2]])
    assert np.array_equal(alone.meta["w_tilde"][0], h1.meta["w_tilde"][2])
    # different repeats draw different noise, uncorrelated
    x = h1.meta["w_tilde"] - cs.dpadmm(data, reg="l2", T=5, noise_multiplier=h1.meta["noise_multiplier"],
                                       add_noise=False).meta["w_tilde"]
    assert not np.allclose(x[0], x[1])
    big = [g.standard_normal(10_000) for g in repeat_generators(11, 2, "y")]
    assert abs(np.corrcoef(big)[0, 1]) < 0.05


def test_pvp_dvp_and_dpsgd_run_and_report_noise():
    A, b, data = _problem(n=4, m=30, d=5, D=2, seed=8)
    rngs = repeat_generators(0, 2, "p")
    h = cs.pvp(data, T=3, rngs=rngs, epsilon=0.1, delta=1e-4)
    assert np.isclose(h.meta["sigma"], hb.pvp_sigma(30, 0.1, 1e-6, 0.1, 1e-4))
    assert h.traces["el"].shape == (2, 4) and np.all(np.isfinite(h.traces["aov"]))
    assert np.isclose(cs.pvp(data, T=2, rngs=rngs, sigma=0.0).meta["sigma"], 0.0)
    h = cs.dvp(data, T=3, rngs=repeat_generators(0, 2, "d"), epsilon=0.05)
    assert h.meta["Delta"] > 0 and h.traces["err"].shape == (2, 4)
    hs = sgd.dpsgd(data, reg="l2", T=3, rngs=repeat_generators(0, 2, "s"), epsilon=0.1, delta=1e-4)
    assert np.isclose(hs.meta["sigma"], 2 * hb.noise_multiplier(0.1, 1e-4) / 30)
    assert hs.meta["noise_multiplier"] == pytest.approx(hb.noise_multiplier(0.1, 1e-4))
    assert np.array_equal(hs.traces["err"], hs.traces["err_global"])


def test_dpsgd_conventions_and_noiseless_step():
    A, b, data = _problem(n=3, m=10, d=4, D=1, seed=9)
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


def test_test_error_counts_ties_as_negative():
    A, b, data = _problem(n=2, m=5, d=3)
    w = np.zeros((1, 2, 3))  # every score is 0 -> predicted -1
    neg = (data.y_test < 0).mean()
    assert np.allclose(data.test_error(w), 1 - neg)


@pytest.mark.parametrize("bad, match", [
    (dict(epsilon=0.0, delta=1e-4), "epsilon"),
    (dict(epsilon=-1.0, delta=1e-4), "epsilon"),
    (dict(epsilon=0.1, delta=1.0), "delta"),
    (dict(epsilon=0.1, delta=0.0), "delta"),
    (dict(epsilon=0.1, delta=1e-4, rho=0.0), "rho"),
    (dict(epsilon=0.1, delta=1e-4, rho=-1.0), "rho"),
    (dict(epsilon=0.1, delta=1e-4, T=0), "T"),
    (dict(epsilon=0.1, delta=1e-4, noise_multiplier=3.0), "either"),
])
def test_bad_parameters_raise_before_work(bad, match):
    A, b, data = _problem()
    kw = dict(reg="l2", T=3, rngs=repeat_generators(0, 1, "b"))
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        cs.dpadmm(data, **kw)


def test_bad_split_and_unnormalised_rows_raise():
    rng = np.random.default_rng(0)
    X, y = rng.random((500, 3)) / 2, np.where(rng.random(500) > 0.5, 1.0, -1.0)
    with pytest.raises(ValueError, match="divide"):
        cs.split_star(X, y, 7, repeat_generators(0, 1, "s"), n_train=400)
    data = cs.split_star(X * 3, y, 4, repeat_generators(0, 1, "s"), n_train=400)
    with pytest.raises(ValueError, match="c_1"):
        cs.dpadmm(data, reg="l2", T=2, rngs=repeat_generators(0, 1, "n"), epsilon=0.1, delta=1e-4)
    with pytest.raises(ValueError, match="rho"):
        cs.admm(data, reg="l2", T=2, rho=0)
    with pytest.raises(ValueError, match="regulariser"):
        cs.admm(data, reg="l3", T=2)
    with pytest.raises(ValueError, match="convention"):
        sgd.dpsgd(data, reg="l2", T=2, sigma_value=0.0, convention="mean")


def test_moments_accountant_closed_form_is_the_minimum():
    z, t, delta = hb.noise_multiplier(0.05, 1e-5), 100, 1e-5
    grid = accounting.moments_accountant_epsilon(z, t, delta, max_lambda=1e4)
    assert abs(grid - hb.eps_bar(0.05, 1e-5, t)) < 1e-6


def test_star_from_rows_places_each_row_at_its_agent():
    rng = np.random.default_rng(3)
    X, y = rng.random((60, 4)) / 4, np.where(rng.random(60) > 0.5, 1.0, -1.0)
    train = rng.permutation(60)[:48].reshape(2, 3, 8)  # 2 draws, 3 agents, 8 samples each
    test = np.stack([np.arange(48, 60), np.arange(0, 12)])
    data = cs.star_from_rows(X, y, train, test)
    w = rng.standard_normal((2, 3, 4))
    expected = y[train] * np.einsum("rimd,rid->rim", X[train], w)  # b_ij a_ij^T w_i from the rows directly
    np.testing.assert_allclose(data.margins(w), expected, rtol=1e-12)
    assert data.test_error(w).shape[0] == 2
    # split_star is this constructor applied to its own random draws
    from repro_dpadmm.datasets import partition
    rows, tests = [], []
    for g in repeat_generators(0, 2, "s"):
        tr, te = partition.train_test(60, 40, g)
        rows.append(tr[partition.even(40, 4, g)])
        tests.append(te)
    w4 = rng.standard_normal((2, 4, 4))
    a = cs.split_star(X, y, 4, repeat_generators(0, 2, "s"), n_train=40)
    b = cs.star_from_rows(X, y, np.stack(rows), np.stack(tests))
    np.testing.assert_array_equal(a.margins(w4), b.margins(w4))
    np.testing.assert_array_equal(a.test_error(w4), b.test_error(w4))
    with pytest.raises(ValueError, match="draws, agents"):
        cs.star_from_rows(X, y, train.reshape(2, -1))
