"""Tests of ADMM sharing (Hu et al.), its privacy bounds, the FDML-SGD baseline and the experiment functions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from repro_dpadmm.algorithms import sharing
from repro_dpadmm.algorithms.fdml_sgd import fdml_sgd, select_lr
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
    rng = np.random.default_rng(1)
    xt, y, z = rng.normal(size=(1, 9)), rng.normal(size=(1, 120)), rng.normal(size=(1, 120))
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


def test_sklearn_baseline_uses_inverse_lambda():
    from repro_dpadmm.experiments import hu2020_sharing as ex

    sk = {"C": "inverse_lam", "solver": "liblinear", "fit_intercept": True, "max_iter": 5000}
    clf = ex.sklearn_model(sk, 1e-3)
    assert clf.C == pytest.approx(1000.0) and clf.solver == "liblinear" and clf.fit_intercept
    assert ex.sklearn_model({**sk, "C": 1.0, "solver": "lbfgs"}, 1e-3).C == 1.0
    with pytest.raises(ValueError, match="inverse_lam"):
        ex.sklearn_C({"C": -1.0}, 1e-3)


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


# SPEC §3.3 [V] examples of Corollary 1 with delta' = 1e-5
@pytest.mark.parametrize("eps, expected", [
    (0.01, [0.108, 0.153, 0.217, 0.344]), (0.1, [1.126, 1.623, 2.356, 3.919]), (1.0, [19.3, 32.4, 55.8, 119.8])])
def test_advanced_composition_matches_spec(eps, expected):
    got = bounds.corollary1_epsilon(eps, np.array([5, 10, 20, 50]), 1e-5)
    np.testing.assert_allclose(got, expected, rtol=6e-3)
    assert bounds.corollary1_delta(0.01, 100, 1e-5) == pytest.approx(1.00001)


def test_theorem1_and_lemma1():
    C = bounds.sensitivity_bound(lam=1e-3, c1=2.0, b1=10.0, M=2, rho=1.0, d_m=np.array([67, 57]))
    np.testing.assert_allclose(C, 3 * (2e-3 + 30.0) / np.array([67, 57]))
    sig = bounds.theorem1_sigma(C, 0.5, 1e-5)
    np.testing.assert_allclose(sig, C * np.sqrt(2 * np.log(1.25e5)) / 0.5)
    np.testing.assert_allclose(bounds.epsilon_for_sigma(C, sig, 1e-5), 0.5)
    with pytest.raises(ValueError, match="epsilon"):
        bounds.theorem1_sigma(C, 3.0, 1e-5)             # outside the theorem's (0, 1] unless strict=False
    assert np.all(bounds.theorem1_sigma(C, 3.0, 1e-5, strict=False) < sig)
    with pytest.raises(ValueError, match="rho"):
        bounds.sensitivity_bound(1e-3, 2.0, 1.0, 2, 0.0, 5)


def test_tight_accounting_beats_advanced_composition():
    z = float(bounds.theorem1_sigma(1.0, 0.5, 1e-5))
    tight = bounds.composed_gaussian_epsilon(z, 20, 20 * 1e-5 + 1e-5)
    assert tight < bounds.corollary1_epsilon(0.5, 20, 1e-5)
    assert bounds.composed_gaussian_epsilon(z, 10, 1e-5) < bounds.composed_gaussian_epsilon(z, 20, 1e-5)


def test_fdml_sgd_decreases_objective_and_selects_lr():
    D, Y = small_problem(N=400)
    rngs = repeat_generators(0, 2, "sgd")
    h = fdml_sgd(D, Y, (0, 4, 9), lam=0.5, lr=0.5, epochs=20, batch_size=16, rngs=rngs, D_test=D, Y_test=Y)
    x_opt = sharing.centralised_optimum(D, Y, 0.5)
    f_opt = sharing.regularised_objective(D, Y, x_opt, 0.5)
    assert h.traces["objective"][0, 0] > h.traces["objective"][0, -1]
    assert h.traces["objective"][:, -1].max() < f_opt * 1.02
    lr, scores = select_lr(D, Y, (0, 4, 9), lam=0.5, grid=[1e-4, 0.3, 1.0], batch_size=16,
                           make_rng=lambda: np.random.default_rng(1))
    assert lr == [1e-4, 0.3, 1.0][int(np.argmin(scores))] and scores[0] > scores[1]
    with pytest.raises(ValueError, match="cover"):
        fdml_sgd(D, Y, (0, 9, 10), lam=0.5, lr=0.1, epochs=1, batch_size=16, rngs=rngs)


def _synthetic_gisette_root(tmp_path, N=300, Nt=100, d=50, seed=0):
    """A project root whose processed gisette was read from small dense LIBSVM files (the gisette loader path)."""
    from sklearn.datasets import dump_svmlight_file

    from repro_dpadmm.datasets import libsvm

    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    arrays = {}
    for split, n in (("train", N), ("test", Nt)):
        X = np.clip(rng.normal(size=(n, d)) * 0.5, -1, 1)            # dense in [-1, 1] like gisette_scale
        y = np.where(X @ w > 0, 1, -1)
        path = tmp_path / f"gisette_{split}.svm"
        dump_svmlight_file(X, y, str(path), zero_based=False)
        Xr, yr = libsvm.load(path, d)
        arrays[f"X_{split}"], arrays[f"y_{split}"] = Xr, yr
    proc = tmp_path / "resources" / "processed"
    proc.mkdir(parents=True)
    np.savez(proc / "gisette.npz", **arrays)
    (proc / "gisette.json").write_text(json.dumps({"name": "gisette", "available": True}))
    return tmp_path


def gisette_like_params():
    return {"seed": 0, "boundaries": [0, 20, 40, 50], "bias": True, "rho": 1.0, "lam": 1e-3, "lam_scale": "sum",
            "noise_on": "shared", "z_penalty": "paper", "iterations": 15, "noise_iterations": 10,
            "noise_sigmas": [0.1, 1.0], "repeats": 2, "settle_tols": [0.005],
            "variants": ["eq7_literal", "z_penalty_code", "sklearn_defaults", "authors_calibration"],
            "sgd": {"epochs": 3, "read_at": 2, "batch_size": 50, "init_std": 0.01, "lr_grid": [1e-3, 1e-2],
                    "lr_select_epochs": 1},
            "sklearn": {"C": "inverse_lam", "solver": "liblinear", "fit_intercept": True, "max_iter": 5000},
            "sklearn_defaults": {"C": 1.0, "solver": "lbfgs", "fit_intercept": True, "max_iter": 5000},
            "panels": {"gisette": {"boundaries": [0, 20, 40, 50], "sigmas": [0.0, 0.3, 10.0], "read_at": 8,
                                   "also_read_at": [4], "epsilons": [1.0, 30.0], "iterations": 6}},
            "delta": 0.01, "delta_prime": 1e-5, "c1": 2.0, "accounting_delta": 1e-5}


def test_gisette_code_path_on_synthetic_libsvm(tmp_path, monkeypatch):
    from repro_dpadmm.experiments import hu2020_sharing as ex

    root = _synthetic_gisette_root(tmp_path)
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(root))
    p = gisette_like_params()
    res = ex.convergence_item("gisette", p, root=root)
    m, reps = ex.convergence_metrics(res, p)
    assert (m["n_train"], m["n_test"], m["n_features"], m["n_parties"]) == (300, 100, 50, 3)
    assert (m["d_party1"], m["d_party2"], m["d_party3"]) == (20, 20, 10)
    assert res["problem"]["D"].shape[1] == 51 and np.all(res["problem"]["D"][:, 20] == 1)   # bias in party 1
    assert m["admm_final_objective"] < res["admm"].traces["objective"][0, 0]
    assert "noisy_final_test_logloss.sigma1" in m and "noisy_final_test_logloss.sigma1@eq7_literal" in m
    assert reps["noisy_final_test_logloss.sigma1"].shape == (2,) and "admm_final_test_logloss@z_penalty_code" in m
    assert m["noisy_final_test_logloss.sigma1"] == pytest.approx(reps["noisy_final_test_logloss.sigma1"].mean())
    assert m["sgd_read_at"] == 2 and m["sgd_epochs"] == 3
    noise = ex.noise_panel("gisette", p, root=root)
    nm, nreps = ex.noise_metrics("gisette", noise)
    assert nm["gisette.test_logloss.sigma10"] > nm["gisette.test_logloss.sigma0"]
    assert "gisette.test_logloss_t4.sigma10" in nm and "gisette.test_logloss.sigma10@eq7_literal" in nreps
    assert nm["gisette.sklearn_C"] == pytest.approx(1000.0) and nm["gisette.sklearn_C@sklearn_defaults"] == 1.0
    eps = ex.eps_panel("gisette", p, root=root)
    em, _ = ex.eps_metrics("gisette", eps)
    assert em["gisette.eps1.sigma_party1"] > em["gisette.eps30.sigma_party1"] > 0
    assert em["gisette.eps1.sigma_party1@authors_calibration"] > em["gisette.eps30.sigma_party1@authors_calibration"]
    assert em["gisette.eps30.cor1_delta"] == pytest.approx(6 * 0.01 + 1e-5)


def test_make_problem_rejects_mismatched_test_width():
    from repro_dpadmm.experiments import hu2020_sharing as ex

    X = np.ones((4, 5))
    with pytest.raises(ValueError, match="pad"):
        ex.make_problem(X, np.ones(4), np.ones((4, 4)), np.ones(4), [0, 2, 5])


@pytest.mark.mirror
def test_smoke_item_through_runner(processed_root, tmp_path):
    from repro_dpadmm import config as config_mod
    from repro_dpadmm.runner import run_item

    from conftest import ROOT

    if processed_root != ROOT:
        pytest.skip("build the processed datasets in the repository first (snakemake datasets)")
    params = config_mod.item_params("hu2020_sharing", "fig3", ROOT / "config" / "smoke.yaml", root=ROOT)
    metrics = run_item("hu2020_sharing", "fig3", params, tmp_path / "fig3", root=ROOT)
    saved = json.loads((tmp_path / "fig3" / "metrics.json").read_text())
    assert saved["status"] == "ok" and saved == metrics
    assert saved["a9a.status"] == "ok"
    assert saved["a9a.sklearn_all"] < saved["a9a.sklearn_party1"]
    assert 0.2 < saved["a9a.test_logloss.sigma0"] < 0.5
    if saved["gisette.status"] != "ok":
        assert saved["gisette.status"] == "not run: dataset unavailable"
