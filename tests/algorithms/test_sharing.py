"""algorithms.sharing: ADMM sharing (Hu et al., eqs. (6)-(9), Algorithm 1): the updates against direct solvers, the
noise readings, what a run records as spent, determinism and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from repro_dpadmm.algorithms import sharing
from repro_dpadmm.privacy.bounds import hu2020 as bounds
from repro_dpadmm.problems.logistic import loss
from repro_dpadmm.rng import repeat_generators
from repro_dpadmm.solvers import NotConvergedError


def small_problem(N=120, d=9, seed=0):
    rng = np.random.default_rng(seed)
    D = rng.normal(size=(N, d)) / np.sqrt(d)
    w = rng.normal(size=d) * 2
    Y = np.where(D @ w + 0.3 * rng.normal(size=N) > 0, 1.0, -1.0)
    return D, Y


def test_x_update_closed_form_equals_lbfgsb():
    D, Y = small_problem()
    b, rho, lam = (0, 4, 9), 0.7, 0.3
    st = sharing.setup(D, Y, b, rho=rho, lam=lam)
    xt, y, z = _random_state(D, b, seed=1)
    state = sharing.SharingState(xt.copy(), xt, None, xt @ D.T, z, y)
    x_new = sharing.sharing_step(st, state, np.zeros((1, 9)), None)
    for lo, hi in zip(b, b[1:]):
        Dm, others = D[:, lo:hi], D @ xt[0] - D[:, lo:hi] @ xt[0, lo:hi]

        def f(u):
            r = others + Dm @ u - z[0]
            return lam * u @ u + y[0] @ (Dm @ u) + rho / 2 * r @ r, 2 * lam * u + Dm.T @ (y[0] + rho * r)

        ref = minimize(f, np.zeros(hi - lo), jac=True, method="L-BFGS-B",
                       options={"ftol": 1e-15, "gtol": 1e-12}).x
        np.testing.assert_allclose(x_new.x[0, lo:hi], ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("rho", [0.05, 1.0, 20.0])
def test_z_update_newton_equals_minimize_scalar(rho):
    rng = np.random.default_rng(2)
    N = 60
    s, y = rng.normal(scale=3, size=(2, N)), rng.normal(scale=2, size=(2, N))
    Y = np.where(rng.random(N) > 0.5, 1.0, -1.0)
    z = sharing.z_update(s, y, Y, rho)
    for r in range(2):
        for i in range(N):
            h = lambda u: loss(Y[i] * u) - y[r, i] * u + rho / 2 * (s[r, i] - u) ** 2  # noqa: E731
            ref = minimize_scalar(h, bracket=(s[r, i] - 50, s[r, i] + 50), tol=1e-12).x
            assert abs(z[r, i] - ref) < 1e-6 * (1 + abs(ref))


@pytest.mark.parametrize("M_bounds", [(0, 5, 9), (0, 3, 6, 9)])
def test_noise_free_admm_reaches_centralised_optimum(M_bounds):
    D, Y = small_problem()
    lam = 0.5
    h = sharing.admm_sharing(D, Y, M_bounds, rho=1.0, lam=lam, iterations=400)
    x_opt = sharing.centralised_optimum(D, Y, lam, tol=1e-12)
    f_opt = sharing.regularised_objective(D, Y, x_opt, lam)
    f_admm = sharing.regularised_objective(D, Y, h.meta["x"][0], lam)
    assert abs(f_admm - f_opt) / f_opt < 1e-6
    assert h.traces["objective"][0, -1] == pytest.approx(f_admm, rel=1e-6)   # shared values = D x without noise


def test_shared_noise_mode_x_update_subtracts_own_noise():
    D, Y = small_problem()
    b, rho, lam = (0, 4, 9), 1.3, 0.2
    st = sharing.setup(D, Y, b, rho=rho, lam=lam)
    rng = np.random.default_rng(3)
    x, y, z = rng.normal(size=(1, 9)), rng.normal(size=(1, 120)), rng.normal(size=(1, 120))
    xi = rng.normal(size=(1, 120, 2))
    s = x @ D.T + xi.sum(-1)
    new = sharing.sharing_step(st, sharing.SharingState(x, x, xi, s, z, y), None, None, "shared",
                               np.zeros((1, 2)))
    for m, (lo, hi) in enumerate(zip(b, b[1:])):
        Dm = D[:, lo:hi]
        r = s[0] - (Dm @ x[0, lo:hi] + xi[0, :, m]) - z[0]      # the other parties' shared values minus z
        K = 2 * lam * np.eye(hi - lo) + rho * Dm.T @ Dm
        np.testing.assert_allclose(new.x[0, lo:hi], np.linalg.solve(K, -Dm.T @ (y[0] + rho * r)), rtol=1e-9)


def _random_state(D, b, seed=3):
    """A state with the shared sum consistent with x (no pending shared noise), for one-step tests."""
    rng = np.random.default_rng(seed)
    N, d = D.shape
    x, y, z = rng.normal(size=(1, d)), rng.normal(size=(1, N)), rng.normal(size=(1, N))
    return x, y, z


def _released(D, b, m, new, noise_on):
    """Party m's pushed value from a local update: D_m x~_m (+ its shared noise)."""
    lo, hi = b[m], b[m + 1]
    own = new.xt[:, lo:hi] @ D[:, lo:hi].T
    return own + new.xi[:, :, m] if noise_on == "shared" else own


@pytest.mark.parametrize("noise_on", ["shared", "params"])
def test_released_noise_variance_per_sample(noise_on):
    """noise_on="shared": the pushed value carries noise of variance sigma^2 on every sample (Theorem 1's mechanism);
    "params" (eq. (7) read literally): sigma^2 ||D_m^i||^2 on sample i. Empirically, to 1%."""
    D, Y = small_problem(N=60)
    D = D * np.linspace(0.5, 2.0, 60)[:, None]               # rows of different norms
    # "params": a run's noise is one xi_m shared by all samples, so only the runs average out: more of them
    b, R, sigma = (0, 4, 9), (6000 if noise_on == "shared" else 60000), 0.7
    st = sharing.setup(D, Y, b, rho=1.0, lam=0.1)
    x, y, z = _random_state(D, b)
    xi0 = np.zeros((1, 60, 2)) if noise_on == "shared" else None
    rep = lambda a: np.repeat(a, R, axis=0)  # noqa: E731
    state = sharing.SharingState(rep(x), rep(x), None if xi0 is None else rep(xi0), rep(x @ D.T), rep(z), rep(y))
    rngs = repeat_generators(11, R, "variance")
    new = sharing.local_update(st, state, np.full((R, 9), sigma), rngs, noise_on, np.full((R, 2), sigma))
    clean = sharing.local_update(st, state, None, None, noise_on if noise_on == "params" else "shared",
                                 np.zeros((R, 2)))
    for m in (0, 1):
        noise = _released(D, b, m, new, noise_on) - _released(D, b, m, clean, noise_on)
        var = noise.var(axis=0)
        expected = sigma ** 2 * (np.ones(60) if noise_on == "shared"
                                 else (D[:, b[m]:b[m + 1]] ** 2).sum(1))
        assert np.mean(var / expected) == pytest.approx(1.0, rel=0.01)
        assert np.all(np.abs(var / expected - 1) < 0.1)      # every sample, not only on average
    if noise_on == "shared":                                # the parameters stay noise-free
        np.testing.assert_array_equal(new.xt, new.x)


def test_authors_calibration_matches_hand_computation():
    """sigma_{m,t} = sqrt(2 ln(1.25/delta))/eps * 3/(d_m rho) * (c_1 lam + ||y^t|| + rho ||s^t - D_m x_m^{t+1}||),
    computed by hand (x_m^{t+1} by a direct solve of (6)); the noise D_m xi has covariance sigma^2 P_m (P_m the
    projection on the column space of D_m): it lies there and its total variance is sigma^2 rank(D_m)."""
    D, Y = small_problem(N=50)
    D[:, 3] = D[:, 2]                                         # party 1 rank-deficient (as a9a's one-hot blocks)
    b, rho, lam, eps, delta, c1 = (0, 4, 9), 1.3, 0.2, 3.0, 0.01, 2.0
    st = sharing.setup(D, Y, b, rho=rho, lam=lam, pinv_half=True)
    rng = np.random.default_rng(4)
    x, y, z = rng.normal(size=(1, 9)), rng.normal(size=(1, 50)), rng.normal(size=(1, 50))
    s = x @ D.T + 0.3 * rng.normal(size=(1, 50))             # a pulled sum (other parties' noisy shares)
    mult = np.sqrt(2 * np.log(1.25 / delta)) / eps
    R = 4000
    rep = lambda a: np.repeat(a, R, axis=0)  # noqa: E731
    state = sharing.SharingState(rep(x), rep(x), None, rep(s), rep(z), rep(y))
    new = sharing.local_update(st, state, None, repeat_generators(2, R, "authors"), "authors",
                               np.full((R, 2), mult), c1)
    for m, (lo, hi) in enumerate(zip(b, b[1:])):
        Dm = D[:, lo:hi]
        r = s[0] - Dm @ x[0, lo:hi] - z[0]
        xm = np.linalg.solve(2 * lam * np.eye(hi - lo) + rho * Dm.T @ Dm, -Dm.T @ (y[0] + rho * r))
        hand = mult * 3 / ((hi - lo) * rho) * (c1 * lam + np.linalg.norm(y[0]) + rho * np.linalg.norm(s[0] - Dm @ xm))
        np.testing.assert_allclose(new.sig[:, m], hand, rtol=1e-10)
        np.testing.assert_allclose(new.x[0, lo:hi], xm, rtol=1e-8, atol=1e-10)
        noise = (new.xt[:, lo:hi] - new.x[:, lo:hi]) @ Dm.T               # D_m xi, (R, N)
        U, sv, _ = np.linalg.svd(Dm, full_matrices=False)
        rank = int(np.sum(sv > 1e-10 * sv[0]))
        Q = U[:, :rank]
        assert np.abs(noise - (noise @ Q) @ Q.T).max() < 1e-9 * np.abs(noise).max()   # in the column space
        assert rank == (hi - lo) - (1 if m == 0 else 0)
        total = (noise ** 2).sum(1).mean()
        assert total == pytest.approx(hand ** 2 * rank, rel=0.03)          # sigma^2 rank, not sigma^2 N


def test_authors_mode_is_deterministic_and_needs_its_factor():
    D, Y = small_problem()
    kw = dict(rho=1.0, lam=0.1, iterations=6, sigma=[1.0, 3.0], noise_on="authors")
    h1 = sharing.admm_sharing(D, Y, (0, 4, 9), rngs=repeat_generators(5, 2, "a"), **kw)
    h2 = sharing.admm_sharing(D, Y, (0, 4, 9), rngs=repeat_generators(5, 2, "a"), **kw)
    np.testing.assert_array_equal(h1.traces["test_logloss"] if "test_logloss" in h1.traces else h1.traces["objective"],
                                  h2.traces["test_logloss"] if "test_logloss" in h2.traces else h2.traces["objective"])
    assert np.all(h1.meta["sigma_t"][:, 1:] > 0)
    st = sharing.setup(D, Y, (0, 4, 9), rho=1.0, lam=0.1)
    with pytest.raises(ValueError, match="pinv_half"):
        sharing.admm_sharing(D, Y, (0, 4, 9), setup_=st, rngs=repeat_generators(5, 2, "a"), **kw)


def test_z_update_raises_when_not_converged():
    rng = np.random.default_rng(2)
    s, y = rng.normal(scale=30, size=(1, 40)), rng.normal(scale=2, size=(1, 40))
    Y = np.where(rng.random(40) > 0.5, 1.0, -1.0)
    with pytest.raises(NotConvergedError, match="z-update"):
        sharing.z_update(s, y, Y, 0.05, max_steps=2)


def test_z_penalty_of_the_authors_code():
    """z_penalty="code": the centre minimises l(z) - <y, z> + 2 rho ||s - z||^2 (the authors' code) instead of the
    paper's rho/2; the dual step keeps rho."""
    D, Y = small_problem(N=30)
    rho = 0.8
    st = sharing.setup(D, Y, (0, 4, 9), rho=rho, lam=0.1, z_penalty="code")
    assert st.z_rho == pytest.approx(4 * rho)
    rng = np.random.default_rng(6)
    s, y = rng.normal(size=(1, 30)), rng.normal(size=(1, 30))
    new = sharing.centre_update(st, sharing.SharingState(None, None, None, s, np.zeros((1, 30)), y))
    for i in range(30):
        h = lambda u: loss(Y[i] * u) - y[0, i] * u + 2 * rho * (s[0, i] - u) ** 2  # noqa: E731
        ref = minimize_scalar(h, bracket=(s[0, i] - 20, s[0, i] + 20), tol=1e-12).x
        assert abs(new.z[0, i] - ref) < 1e-6 * (1 + abs(ref))
    np.testing.assert_allclose(new.y, y + rho * (s - new.z))
    with pytest.raises(ValueError, match="z_penalty"):
        sharing.setup(D, Y, (0, 4, 9), rho=rho, lam=0.1, z_penalty="half")


def test_sigma_zero_shared_equals_params():
    D, Y = small_problem()
    a = sharing.admm_sharing(D, Y, (0, 4, 9), rho=1.0, lam=0.1, iterations=20, noise_on="params")
    b = sharing.admm_sharing(D, Y, (0, 4, 9), rho=1.0, lam=0.1, iterations=20, noise_on="shared")
    np.testing.assert_allclose(a.traces["objective"], b.traces["objective"], rtol=1e-12)


def test_determinism_per_seed_and_per_run():
    D, Y = small_problem()
    kw = dict(rho=1.0, lam=0.1, iterations=15, sigma=[0.1, 0.3])
    h1 = sharing.admm_sharing(D, Y, (0, 4, 9), rngs=repeat_generators(5, 2, "t"), **kw)
    h2 = sharing.admm_sharing(D, Y, (0, 4, 9), rngs=repeat_generators(5, 2, "t"), **kw)
    h3 = sharing.admm_sharing(D, Y, (0, 4, 9), rngs=repeat_generators(6, 2, "t"), **kw)
    np.testing.assert_array_equal(h1.traces["objective"], h2.traces["objective"])
    assert not np.allclose(h1.traces["objective"], h3.traces["objective"])
    # a run does not depend on the other runs of the batch
    alone = sharing.admm_sharing(D, Y, (0, 4, 9), rho=1.0, lam=0.1, iterations=15, sigma=[0.3],
                                 rngs=repeat_generators(5, 2, "t")[1:])
    np.testing.assert_allclose(alone.traces["objective"][0], h1.traces["objective"][1], rtol=1e-10)
    # noise changes the trace
    assert not np.allclose(h1.traces["objective"][0], h1.traces["objective"][1])


@pytest.mark.parametrize("bounds_, msg", [((0, 5), "cover"), ((0, 4, 12), "cover"), ((0, 4, 4, 9), "at least one"),
                                          ((1, 4, 9), "cover")])
def test_bad_feature_split(bounds_, msg):
    D, Y = small_problem()
    with pytest.raises(ValueError, match=msg):
        sharing.admm_sharing(D, Y, bounds_, rho=1.0, lam=0.1, iterations=2)


@pytest.mark.parametrize("kw, msg", [({"rho": 0.0}, "rho"), ({"rho": -1.0}, "rho"), ({"lam": -1.0}, "lambda"),
                                     ({"sigma": -0.1}, "sigma"), ({"noise_on": "grads"}, "noise_on"),
                                     ({"iterations": 0}, "iterations"), ({"sigma": 0.1}, "generators")])
def test_bad_parameters(kw, msg):
    D, Y = small_problem()
    args = {"rho": 1.0, "lam": 0.1, "iterations": 2, **kw}
    with pytest.raises(ValueError, match=msg):
        sharing.admm_sharing(D, Y, (0, 4, 9), **args)


def test_bad_labels():
    D, Y = small_problem()
    with pytest.raises(ValueError, match="labels"):
        sharing.admm_sharing(D, (Y + 1) / 2, (0, 4, 9), rho=1.0, lam=0.1, iterations=2)


def test_a_run_records_each_partys_release_under_shared_noise():
    """With b_1 given, one Spend per run and party: T Gaussian steps with multiplier sigma_m / C_m, C_m Lemma 1's
    bound from the run's own lam, c_1, rho and d_m; Corollary 1 named with Theorem 1's delta and delta'. Its totals
    are Corollary 1 at the per-iteration epsilon the noise buys and the accountant's on the same multiplier."""
    from repro_dpadmm.privacy import accounting

    D, Y = small_problem()
    b, rho, lam, c1, b1, T, delta = (0, 4, 9), 1.0, 0.1, 2.0, 5.0, 6, 0.01
    C = bounds.sensitivity_bound(lam, c1, b1, 2, rho, np.diff(b))
    sig = np.stack([bounds.theorem1_sigma(C, e, delta, strict=False) for e in (3.0, 30.0)])      # (runs, M)
    h = sharing.admm_sharing(D, Y, b, rho=rho, lam=lam, iterations=T, sigma=sig, c1=c1, b1=b1,
                             rngs=repeat_generators(1, 2, "spend"), bound_args={"delta": delta, "delta_prime": 1e-5})
    assert len(h.spends) == 4
    for k, (record, e) in enumerate(zip(h.spends, (3.0, 3.0, 30.0, 30.0))):
        z = sig[k // 2, k % 2] / C[k % 2]
        assert record.neighbouring == "replace-one" and record.bound == "hu2020.corollary1"
        assert record.event.count == T and record.event.event.noise_multiplier == z
        assert z == pytest.approx(np.sqrt(2 * np.log(1.25 / delta)) / e, rel=1e-14)
        got = bounds.tight_totals(record, 1e-5)
        assert got["paper_eps"] == pytest.approx(bounds.corollary1_epsilon(e, T, 1e-5), rel=1e-12)
        assert got["rdp_eps"] == accounting.rdp_epsilon(z, 1e-5, steps=T)
        assert got["pld_eps"] == accounting.pld_epsilon(z, 1e-5, steps=T, discretization=max(1e-4, 2e-5 * got["rdp_eps"]))
    # no b_1, or a noise reading Theorem 1 does not describe: nothing recorded
    kw = dict(rho=rho, lam=lam, iterations=2, sigma=0.5, rngs=repeat_generators(1, 1, "none"))
    assert sharing.admm_sharing(D, Y, b, **kw).spends == []
    assert sharing.admm_sharing(D, Y, b, noise_on="params", b1=b1, **kw).spends == []


def test_python2_half_is_integer_division_for_an_integer_rho():
    assert sharing.python2_half(1.0) == 0.0 and sharing.python2_half(3) == 1.0 and sharing.python2_half(2.0) == 1.0
    assert sharing.python2_half(1.5) == 0.75


def test_authors_x_step_is_their_lbfgsb_on_their_function():
    """solvers="code": each party's x is scipy's L-BFGS-B from its previous noise-free x, on the authors' function value
    lam ||x|| + <y, D_m x> + w ||r + D_m x||^2 (w = rho // 2 = 0 for rho = 1) with the gradient of the intended
    quadratic, computed here directly from D_m as their code does."""
    D, Y = small_problem(N=80)
    b, lam = (0, 4, 9), 0.3
    xt, y, z = _random_state(D, b, seed=3)
    x_prev = xt + 0.1
    for rho in (1.0, 2.0):
        st = sharing.setup(D, Y, b, rho=rho, lam=lam, solvers="code")
        state = sharing.SharingState(x_prev.copy(), xt, None, xt @ D.T, z, y)
        new = sharing.local_update(st, state, None, None, "params")
        assert new.stats["x_abnormal"].shape == (1, 2) and new.stats["x_unchanged"].shape == (1, 2)
        for lo, hi in zip(b, b[1:]):
            Dm = D[:, lo:hi]
            r = xt[0] @ D.T - Dm @ xt[0, lo:hi] - z[0]
            w = 0.0 if rho == 1.0 else rho / 2

            def f(u):
                return lam * np.linalg.norm(u) + y[0] @ (Dm @ u) + w * np.linalg.norm(r + Dm @ u) ** 2

            def g(u):
                return lam * 2 * u + Dm.T @ (y[0] + rho * (r + Dm @ u))

            ref = minimize(f, x_prev[0, lo:hi], jac=g, method="L-BFGS-B").x
            np.testing.assert_allclose(new.x[0, lo:hi], ref, rtol=1e-6, atol=1e-9)


def test_authors_solvers_record_what_they_left_unsolved():
    """A run with the authors' solvers records, per update, the share of x-solves that ended abnormally or did not move
    and of z-solves stopped at Brent's cap; the exact solvers record nothing of the kind. Its noise-free iterates
    approach the exact run's (the inexact solves damp, they do not change the problem)."""
    D, Y = small_problem()
    kw = dict(rho=1.0, lam=0.1, iterations=40, z_penalty="code")
    h = sharing.admm_sharing(D, Y, (0, 4, 9), solvers="code", **kw)
    exact = sharing.admm_sharing(D, Y, (0, 4, 9), **kw)
    stats = h.meta["solver_stats"]
    assert set(stats) == {"x_abnormal", "x_unchanged", "z_maxiter"} and "solver_stats" not in exact.meta
    for v in stats.values():
        assert v.shape == (1, 40) and np.all((0 <= v) & (v <= 1))
    assert h.meta["solvers"] == "code"
    assert abs(h.traces["objective"][0, -1] - exact.traces["objective"][0, -1]) < 0.05 * exact.traces["objective"][0, 0]
    with pytest.raises(ValueError, match="solvers"):
        sharing.setup(D, Y, (0, 4, 9), rho=1.0, lam=0.1, solvers="lbfgs")
