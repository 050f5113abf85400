"""algorithms.consensus (HUANG's star network): the block-diagonal data, ADMM with exact local solves against the
centralised optimum, DP-ADMM against a direct loop over agents, PVP and DVP, seeding, bad input, and the Spend each
private run records against the noise it drew."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.algorithms import centralized as ce
from repro_dpadmm.algorithms import consensus as cs
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.bounds import huang2019 as hb
from repro_dpadmm.privacy.spend import REPLACE_ONE, pure_epsilons
from repro_dpadmm.problems.logistic import loss
from repro_dpadmm.rng import repeat_generators

from _huang_synth import objective_grad as _objective_grad
from _huang_synth import star_problem as _problem


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


def _old_accountant(eps, delta, T):
    """What the Huang items computed before runs recorded their Spends: the totals of T steps of
    z = sqrt(2 ln(1.25/delta))/eps recomputed from (eps, delta)."""
    z = hb.noise_multiplier(eps, delta)
    return {"paper_eps": hb.eps_bar(eps, delta, T), "paper_eps_int32": hb.eps_bar(eps, delta, T, integer_orders=True),
            "rdp_eps": accounting.rdp_epsilon(z, delta, steps=T), "pld_eps": accounting.pld_epsilon(z, delta, steps=T),
            "noise_multiplier": z, "steps": T}


def _assert_old_totals(spend, eps, delta, T):
    t = hb.spend_totals(spend, delta)
    assert {k: t[k] for k in _old_accountant(eps, delta, T)} == _old_accountant(eps, delta, T)


def test_dpadmm_spend_is_the_noise_it_drew():
    """Each agent's T releases of w-tilde_i^k: multiplier sigma_{i,k} / Delta_{i,k} (Lemma 1) at every k, replace-one,
    claimed by the paper's eps-bar; the noise actually drawn has that sigma; the totals are the old accountant's."""
    A, b, data = _problem(n=50, m=20, d=8, seed=1)
    h = cs.dpadmm(data, reg="l1", T=5, rngs=repeat_generators(0, 2, "s"), epsilon=0.1, delta=1e-4, lam_n=1e-3,
                  record=False)
    (sp,) = h.spends
    z = accounting.gaussian_multipliers(sp.event)
    assert z.size == 5 and sp.neighbouring == REPLACE_ONE and sp.bound == hb.EPS_BAR
    np.testing.assert_allclose(z, h.meta["sigma"] / hb.sensitivity(20, 0.1, h.meta["eta"]), rtol=1e-12)
    assert sp.bound_args == {"z": z[0], "T": 5, "total_delta": 1e-4}
    _assert_old_totals(sp, 0.1, 1e-4, 5)
    # the drawn noise of the last step, w-tilde - w: 800 draws of N(0, (z Delta_5)^2)
    xi = h.meta["w_tilde"] - h.meta["w_local"]
    assert abs(xi.std() / (z[-1] * hb.sensitivity(20, 0.1, h.meta["eta"][-1])) - 1) < 0.1
    # z alone: the same record without the paper bound (no delta to evaluate it at); no noise, no record
    hz = cs.dpadmm(data, reg="l2", T=2, rngs=repeat_generators(0, 2, "s"), noise_multiplier=3.0, record=False)
    assert hz.spends[0].bound is None and accounting.gaussian_multipliers(hz.spends[0].event).tolist() == [3.0, 3.0]
    assert cs.dpadmm(data, reg="l2", T=2, noise_multiplier=3.0, add_noise=False, record=False).spends == []


def test_pvp_spend_is_the_noise_it_drew():
    A, b, data = _problem(n=50, m=30, d=8, seed=2)
    rngs = repeat_generators(0, 2, "p")
    h = cs.pvp(data, T=3, rngs=rngs, epsilon=0.05, delta=1e-5, record=False)
    (sp,) = h.spends
    z = accounting.gaussian_multipliers(sp.event)
    np.testing.assert_allclose(z, h.meta["sigma"] / hb.pvp_sensitivity(30, 0.1, 1e-6), rtol=1e-12)
    assert sp.neighbouring == REPLACE_ONE and sp.bound == hb.EPS_BAR
    _assert_old_totals(sp, 0.05, 1e-5, 3)
    xi = h.meta["w_tilde"] - h.meta["w_local"]  # the last step's shared noise
    assert abs(xi.std() / (z[0] * hb.pvp_sensitivity(30, 0.1, 1e-6)) - 1) < 0.1
    # sigma given directly: multiplier sigma / sensitivity, no paper bound; sigma = 0 is not private, no record
    hs = cs.pvp(data, T=2, rngs=rngs, sigma=0.2, record=False)
    assert accounting.gaussian_multipliers(hs.spends[0].event)[0] == pytest.approx(
        0.2 / hb.pvp_sensitivity(30, 0.1, 1e-6), rel=1e-14)
    assert hs.spends[0].bound is None
    assert cs.pvp(data, T=2, rngs=rngs, sigma=0.0, record=False).spends == []


@pytest.mark.parametrize("eps", [0.01, 0.2])  # both branches of the calibration at m = 30
def test_dvp_spend_is_pure_steps_of_its_budget(eps):
    A, b, data = _problem(n=4, m=30, d=5, seed=8)
    h = cs.dvp(data, T=3, rngs=repeat_generators(0, 1, "d"), epsilon=eps, record=False)
    (sp,) = h.spends
    per_step = pure_epsilons(sp.event)
    assert per_step.size == 3 and sp.neighbouring == REPLACE_ONE and sp.bound == hb.DVP_TOTAL
    np.testing.assert_allclose(per_step, hb.dvp_epsilon(h.meta["alpha"], h.meta["Delta"], 30, 1e-6, 0.1), rtol=1e-12)
    np.testing.assert_allclose(per_step, eps, rtol=1e-12)
    t = hb.spend_totals(sp, 1e-4)
    assert t["paper_eps"] == pytest.approx(3 * eps, rel=1e-12) and t["pld_eps"] <= t["paper_eps"]


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


def test_pvp_and_dvp_run_and_report_noise():
    A, b, data = _problem(n=4, m=30, d=5, D=2, seed=8)
    rngs = repeat_generators(0, 2, "p")
    h = cs.pvp(data, T=3, rngs=rngs, epsilon=0.1, delta=1e-4)
    assert np.isclose(h.meta["sigma"], hb.pvp_sigma(30, 0.1, 1e-6, 0.1, 1e-4))
    assert h.traces["el"].shape == (2, 4) and np.all(np.isfinite(h.traces["aov"]))
    assert np.isclose(cs.pvp(data, T=2, rngs=rngs, sigma=0.0).meta["sigma"], 0.0)
    h = cs.dvp(data, T=3, rngs=repeat_generators(0, 2, "d"), epsilon=0.05)
    assert h.meta["Delta"] > 0 and h.traces["err"].shape == (2, 4)


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


def test_running_averages_for_theorems():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 10, 4))
    A /= np.linalg.norm(A, axis=-1, keepdims=True)
    b = np.where(rng.random((3, 10)) > 0.5, 1.0, -1.0)
    data = cs.star_data(A, b)
    h1 = cs.dpadmm(data, reg="l2", T=1, rngs=repeat_generators(0, 1, "a"), epsilon=0.1, delta=1e-4, record=False)
    assert np.allclose(h1.meta["w_tilde_mean"], h1.meta["w_tilde"])  # (1/t) sum_{k=1}^t with t = 1
    assert np.allclose(h1.meta["w_tilde_mean_prev"], 0.0)  # (1/t) sum_{k=0}^{t-1}: the zero start
    # the running means against the iterates themselves: w-tilde^k is the final iterate of a run of length k (the
    # step size and the noise of iteration k do not depend on T), so the means are plain averages of those
    runs = [cs.dpadmm(data, reg="l2", T=t, rngs=repeat_generators(0, 1, "a"), epsilon=0.1, delta=1e-4,
                      record=False).meta for t in (1, 2, 3)]
    w = [r["w_tilde"] for r in runs]
    np.testing.assert_allclose(runs[2]["w_tilde_mean"], (w[0] + w[1] + w[2]) / 3, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(runs[2]["w_tilde_mean_prev"], (0.0 + w[0] + w[1]) / 3, rtol=1e-12, atol=1e-15)


def test_fast_kernels_equal_straightforward_references():
    """The transposed product through the CSC view equals a CSR copy of the transpose bit for bit, and sigma(-z)
    with numpy's exp equals scipy's expit to an ulp (also at overflow); the local Newton solve built on them stops
    with the same answer as a plain per-agent dense Newton loop."""
    from scipy.special import expit

    A, b, data = _problem(D=2, n=3, m=30, d=5, seed=7)
    u = np.random.default_rng(8).standard_normal((2, 3, 30))
    ref = (data.Xb.T.tocsr() @ u.reshape(-1)).reshape(2, 3, 5)
    assert np.array_equal(data.tproduct(u), ref)
    z = np.concatenate([np.random.default_rng(9).standard_normal(1000) * 20, [800.0, -800.0, 0.0]])
    assert np.allclose(cs.sigmoid_neg(z), expit(-z), rtol=5e-16, atol=0)
    assert cs.sigmoid_neg(np.array([800.0]))[0] == 0.0
    rng = np.random.default_rng(10)
    lin, center = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 5))
    w, _, _ = cs.solve_local_l2(data, np.zeros((2, 3, 5)), lin, center, quad=0.01, rho=0.1, tol=1e-12)
    for r in range(2):
        for i in range(3):  # Newton with dense Hessians, agent by agent
            Ai, bi, v = A[r, i], b[r, i], np.zeros(5)
            for _ in range(50):
                s = expit(-bi * (Ai @ v))
                g = (-(bi * s)[:, None] * Ai).mean(0) + 0.11 * v - lin[r, i] - 0.1 * center[r]
                if np.linalg.norm(g) < 1e-13:
                    break
                H = (Ai * (s * (1 - s))[:, None]).T @ Ai / 30 + 0.11 * np.eye(5)
                v = v - np.linalg.solve(H, g)
            assert np.abs(w[r, i] - v).max() < 1e-11


def test_local_newton_names_problem_step_and_residual_when_not_converged():
    from repro_dpadmm.solvers import NotConvergedError

    A, b, data = _problem(n=3, m=25, d=4, seed=2)
    rng = np.random.default_rng(5)
    lin, center = rng.standard_normal((1, 3, 4)) * 50, rng.standard_normal((1, 4))
    with pytest.raises(NotConvergedError, match="HUANG l2 exact local solve") as e:
        cs.solve_local_l2(data, np.zeros((1, 3, 4)), lin, center, quad=0.01, rho=0.1, max_steps=1)
    assert e.value.iteration == 1 and e.value.residual > 1e-8


def _newton_reference(data, w_start, lin, center, quad, rho, tol=1e-8, max_steps=50, max_cg=50):
    """The Newton-CG local solve as written before the compiled kernels: every step over all problems with masks,
    scipy's products, numpy's CG."""
    kappa = quad + rho
    lin_c = lin + rho * center[..., None, :]

    def grad(w, z):
        sg = cs.sigmoid_neg(z)
        return data.XbT_product(-data.b * sg) / data.m + kappa * w - lin_c, sg

    def cg(hvp, g, forcing, active):
        p, r = np.zeros_like(g), g.copy()
        q = r.copy()
        rr = (r * r).sum(-1, keepdims=True)
        target = (forcing ** 2) * rr
        for _ in range(max_cg):
            Hq = hvp(q)
            qHq = (q * Hq).sum(-1, keepdims=True)
            a = np.divide(rr, qHq, out=np.zeros_like(rr), where=qHq > 0)
            p += a * q
            r -= a * Hq
            rr_new = (r * r).sum(-1, keepdims=True)
            if np.all((rr_new <= target) | ~active[..., None]):
                break
            q = r + np.divide(rr_new, rr, out=np.zeros_like(rr), where=rr > 0) * q
            rr = rr_new
        return p

    w = w_start.copy()
    z = data.b * data.product(w)
    g, sg = grad(w, z)
    gn = cs._norms(g)
    steps = 0
    while gn.max() >= tol and steps < max_steps:
        steps += 1
        active = gn >= tol
        c = sg * (1.0 - sg)
        p = cg(lambda v: data.XbT_product(c * data.product(v)) / data.m + kappa * v, g,
               np.minimum(0.1, np.sqrt(gn))[..., None], active)
        t = np.ones(w.shape[:-1] + (1,))
        for _ in range(30):
            w_new = np.where(active[..., None], w - t * p, w)
            z_new = data.b * data.product(w_new)
            g_new, sg_new = grad(w_new, z_new)
            gn_new = cs._norms(g_new)
            bad = gn_new > gn
            if not bad.any():
                break
            t = np.where(bad[..., None], 0.5 * t, t)
        w, z, g, sg, gn = w_new, z_new, g_new, sg_new, gn_new
    return w, steps, float(gn.max()), z


@pytest.mark.parametrize("D,R", [(2, 2), (1, 3)])
def test_newton_on_active_blocks_equals_masked_reference(monkeypatch, D, R):
    """The Newton solve, stepping on the active problems' blocks alone with the compiled products, gives bit for bit
    what the masked step over all blocks with scipy's products gives (the same operations in the same order), for a
    data draw per repeat and for one draw shared by the repeats."""
    A, b, data = _problem(D=D, n=4, m=30, d=5, seed=11)
    rng = np.random.default_rng(12)
    lin, center = rng.standard_normal((R, 4, 5)), rng.standard_normal((R, 5))
    lin[:, 0] *= 40  # one agent needs more Newton steps than the rest, so the active set shrinks
    cache = {}
    got = cs.solve_local_l2(data, np.zeros((R, 4, 5)), lin, center, quad=0.01, rho=0.1, cache=cache)
    monkeypatch.setattr(type(data), "XbT_product", lambda self, u: self._uncols(self.XbT @ self._cols(u), u.shape[0],
                                                                                  self.d), raising=False)
    want = _newton_reference(data, np.zeros((R, 4, 5)), lin, center, 0.01, 0.1)
    assert got[1] == want[1] > 2
    assert np.array_equal(got[0], want[0]) and got[2] == want[2] and np.array_equal(cache["z"], want[3])

def test_newton_warm_start_cache_gives_the_same_numbers():
    """A solve warm-started at the previous solution reuses that solution's data gradient from the cache; the
    result equals bit for bit a solve that recomputes it (a cache holding the margins alone), and a cache whose 'w'
    is not the warm start is not used."""
    A, b, data = _problem(D=2, n=4, m=30, d=5, seed=13)
    rng = np.random.default_rng(14)
    lin1, lin2, center = rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 5))
    kw = dict(quad=0.01, rho=0.1)
    cache = {}
    w1, *_ = cs.solve_local_l2(data, np.zeros((2, 4, 5)), lin1, center, cache=cache, **kw)
    assert {"z", "w", "gd", "sg"} <= set(cache)
    z_only = {"z": cache["z"].copy()}
    got = cs.solve_local_l2(data, w1, lin2, center, cache=cache, **kw)
    want = cs.solve_local_l2(data, w1, lin2, center, cache=z_only, **kw)
    assert got[1] == want[1] > 0 and np.array_equal(got[0], want[0]) and got[2] == want[2]
    stale = {**cache, "w": cache["w"] + 1.0, "gd": cache["gd"] + 1.0}  # not this warm start: recomputed
    again = cs.solve_local_l2(data, got[0], lin1, center, cache=stale, **kw)
    fresh = cs.solve_local_l2(data, got[0], lin1, center, cache={"z": cache["z"].copy()}, **kw)
    assert np.array_equal(again[0], fresh[0])


@pytest.mark.parametrize("method", ["dpadmm", "pvp"])
def test_the_aggregate_is_the_mean_of_the_shared_models(method):
    """(10c) w^k = mean_i w-tilde_i^k - mean_i gamma_i^{k-1} / rho, and (10d) keeps sum_i gamma_i^k = 0 from
    gamma^0 = 0: the aggregated model the `global_model` readings score is the mean of the released models."""
    A, b, data = _problem(n=50, m=20, d=8, seed=1)
    rngs = repeat_generators(0, 2, "agg", method)
    if method == "dpadmm":
        h = cs.dpadmm(data, reg="l2", T=6, rngs=rngs, epsilon=0.1, delta=1e-4, lam_n=1e-3, record=False)
    else:
        h = cs.pvp(data, T=6, rngs=rngs, epsilon=0.1, delta=1e-4, lam_n=1e-3, record=False)
    np.testing.assert_allclose(h.meta["gamma"].sum(axis=1), 0.0, atol=1e-9)
    np.testing.assert_allclose(h.meta["w"], h.meta["w_tilde"].mean(axis=1), atol=1e-12)


@pytest.mark.parametrize("D,R", [(1, 3), (2, 2)])
@pytest.mark.parametrize("per_agent", [False, True])
@pytest.mark.parametrize("noisy", [True, False])
def test_dpadmm_lanes_equal_one_run_per_step_schedule(D, R, per_agent, noisy):
    """Step-size schedules as lanes of one run (shared data sweeps, each noise draw made once and scaled by each
    lane's sigma_{i,k}) give every lane's final w-tilde^T bit for bit as its own run with fresh Generators of the
    same seeds; the lanes differ from each other."""
    _, _, data = _problem(n=4, m=30, d=6, D=D)
    T, z = 7, 3.0
    base = hb.eta_schedule("l2", T, data.m, z=z, lam_n=1e-3, d=data.d)
    if per_agent:
        base = base[:, None] * np.array([1.0, 0.5, 2.0, 1.5])
    scales = np.array([0.1, 0.3, 1.0, 3.0, 10.0])   # a group of four lanes and one more (the lane kernels)
    etas = scales.reshape(-1, *([1] * base.ndim)) * base
    lanes = cs.dpadmm_lanes(data, reg="l2", T=T, rngs=repeat_generators(5, R, "lanes"), noise_multiplier=z, etas=etas,
                            rho=0.1, lam_n=1e-3, add_noise=noisy)
    assert lanes.shape == (5, R, 4, 6)
    for lane, eta in enumerate(etas):
        one = cs.dpadmm(data, reg="l2", T=T, rngs=repeat_generators(5, R, "lanes"), noise_multiplier=z, eta=eta,
                        rho=0.1, lam_n=1e-3, add_noise=noisy, record=False).meta["w_tilde"]
        np.testing.assert_array_equal(lanes[lane], one)
    assert not np.array_equal(lanes[0], lanes[1])
    with pytest.raises(ValueError, match="etas must be positive"):
        cs.dpadmm_lanes(data, reg="l2", T=T, rngs=repeat_generators(5, R, "lanes"), noise_multiplier=z,
                        etas=etas[:, :-1], rho=0.1, lam_n=1e-3)
