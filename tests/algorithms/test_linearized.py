"""algorithms.linearized: XU's DP-ADMM (Algorithm 2) and DP-AccADMM (Algorithm 3): the updates, convergence of the
noise-free runs, what a noisy run records as spent, determinism and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from repro_dpadmm.algorithms import linearized as lin
from repro_dpadmm.privacy.bounds import xu2020
from repro_dpadmm.privacy.spend import totals
from repro_dpadmm.problems import fused_lasso as fl
from repro_dpadmm.rng import repeat_generators


def tiny_problem(n=60, d=5, lam=0.02, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 1] = X[:, 0] + 0.3 * rng.standard_normal(n)  # correlated features give graph edges
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])
    prob, graph = fl.build(X, y, lam, graph=fl.Graph(edges=edges, d=d, alpha=0.0, seconds=0.0))
    return prob


def reference_minimum(prob):
    """min_x f(x) + lam ||A x||_1 by SLSQP on the split form min f(x) + lam 1^T s, -s <= A x <= s."""
    A = prob.A.toarray()
    m, d = A.shape

    def obj(z):
        return float(prob.loss(z[:d])) + prob.lam * z[d:].sum()

    def jac(z):
        return np.concatenate([prob.grad(z[:d]), np.full(m, prob.lam)])

    cons = [{"type": "ineq", "fun": lambda z: z[d:] - A @ z[:d], "jac": lambda z: np.hstack([-A, np.eye(m)])},
            {"type": "ineq", "fun": lambda z: z[d:] + A @ z[:d], "jac": lambda z: np.hstack([A, np.eye(m)])}]
    z0 = np.zeros(d + m)
    res = so.minimize(obj, z0, jac=jac, constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 2000})
    assert res.success, res.message
    return float(prob.objective(res.x[:d])), res.x[:d]


def test_x_update_is_argmin_of_eq7():
    prob = tiny_problem()
    rng = np.random.default_rng(1)
    A, d = prob.A.toarray(), prob.d
    rho, eta = 1.0, 0.05
    gamma = lin.gamma_min(prob, eta, rho) + 0.3  # G positive definite, so (7) has a unique minimiser
    G = gamma * np.eye(d) - eta * rho * A.T @ A
    x_prev, u, y = rng.standard_normal(d), rng.standard_normal(A.shape[0]), rng.standard_normal(A.shape[0])
    P = 0.1 * rng.standard_normal(d)
    g = prob.grad(x_prev) + P

    def eq7(x):  # <grad f(x_{t-1}) + P_t, x> + rho/2 ||A x - y + u||^2 + ||x - x_{t-1}||_G^2 / (2 eta)
        r = A @ x - y + u
        return g @ x + 0.5 * rho * r @ r + (x - x_prev) @ G @ (x - x_prev) / (2 * eta)

    num = so.minimize(eq7, x_prev, method="BFGS", options={"gtol": 1e-11}).x
    closed = lin.x_update(x_prev[:, None], g[:, None], (A @ x_prev - y + u)[:, None], prob.A.T.tocsr(), eta, rho,
                          gamma)[:, 0]
    np.testing.assert_allclose(closed, num, atol=1e-6)


@pytest.mark.parametrize("accelerated, restart, T, rule, lam", [
    (False, "none", 20000, "conservative", 0.02), (True, "goldstein", 3000, "conservative", 0.02),
    (False, "none", 3000, "paper", 1e-3), (True, "goldstein", 3000, "paper", 1e-3)])
def test_non_private_runs_reach_reference_minimum(accelerated, restart, T, rule, lam):
    prob = tiny_problem(lam=lam)
    f_ref, _ = reference_minimum(prob)
    res = lin.run(prob, T=T, eta=prob.step_size(rule, 1.0), rho=1.0, gamma=1.0, sigma=0.0, accelerated=accelerated,
                  restart=restart)
    f_T = float(prob.objective(res.x_T[0]))
    assert abs(f_T - f_ref) <= 1e-6 * abs(f_ref), (f_T, f_ref)


def test_paper_step_needs_a_small_lambda_over_rho():
    """eta = 1/L_f with gamma = 1 breaks G >= 0 (the paper's gamma_min); it converges while lambda/rho is small (the
    paper's 1e-5, tests above) but cycles when the y-step's threshold lambda/rho is large: the noise-free objective
    keeps rising and falling. The experiments record the largest rise of every noise-free run for this reason."""
    prob = tiny_problem(lam=0.02)
    assert lin.gamma_min(prob, prob.step_size("paper", 1.0), 1.0) > 1.0
    F = prob.objective(lin.run(prob, T=4000, eta=prob.step_size("paper", 1.0)).x[0])
    assert np.diff(F[-500:]).max() > 1e-5
    F_c = prob.objective(lin.run(prob, T=4000, eta=prob.step_size("conservative", 1.0)).x[0])
    assert np.diff(F_c[-500:]).max() <= 1e-12


def test_accadmm_without_restart_stalls():
    """The paper's AccADMM (no restart) gets near the minimum but its last iterate does not converge (a finding)."""
    prob = tiny_problem()
    f_ref, _ = reference_minimum(prob)
    res = lin.run(prob, T=6000, eta=prob.step_size("conservative", 1.0), accelerated=True)
    F = prob.objective(res.x[0])
    assert (F.min() - f_ref) <= 1e-5 * f_ref
    assert (F[-1] - f_ref) > 1e-6 * f_ref


def test_bad_algorithm_input():
    prob = tiny_problem()
    with pytest.raises(ValueError, match="eta"):
        lin.run(prob, T=5, eta=0.0)
    with pytest.raises(ValueError, match="Generator"):
        lin.run(prob, T=5, eta=0.1, sigma=0.1, repeats=2)
    with pytest.raises(ValueError, match="u0"):
        lin.run(prob, T=5, eta=0.1, u0="noisy")


def test_determinism_and_repeat_independence():
    prob = tiny_problem()
    eta = prob.default_eta(1.0)
    a = lin.dp_acc_admm(prob, T=30, eta=eta, sigma=0.05, repeats=3, rngs=repeat_generators(7, 3, "t"))
    b = lin.dp_acc_admm(prob, T=30, eta=eta, sigma=0.05, repeats=3, rngs=repeat_generators(7, 3, "t"))
    np.testing.assert_array_equal(a.x, b.x)
    c = lin.dp_acc_admm(prob, T=30, eta=eta, sigma=0.05, repeats=3, rngs=repeat_generators(8, 3, "t"))
    assert not np.allclose(a.x, c.x)
    # a repeat alone equals the same repeat in a batch, and per-repeat sigma broadcasts
    one = lin.dp_acc_admm(prob, T=30, eta=eta, sigma=[0.05], repeats=1, rngs=repeat_generators(7, 3, "t")[1:2])
    np.testing.assert_allclose(one.x[0], a.x[1], atol=1e-12)
    # sigma = 0 makes all repeats identical and equal to the non-private run
    z = lin.xu_dp_admm(prob, T=30, eta=eta, sigma=0.0, repeats=2)
    np.testing.assert_array_equal(z.x[0], z.x[1])


def test_u0_modes():
    prob = tiny_problem()
    eta = prob.default_eta(1.0)
    paper = lin.run(prob, T=1, eta=eta, u0="paper")
    strict = lin.run(prob, T=1, eta=eta, u0="zero")
    # at x_0 = 0 with u_0 from the paper, A^T u_0 = -(1/rho) grad f(0): the first x step has no gradient term left
    u0 = lin.initial_dual(prob, np.zeros((prob.d, 1)), 1.0)[:, 0]
    np.testing.assert_allclose(prob.A.T @ u0, -prob.grad(np.zeros(prob.d)), atol=1e-12)
    assert not np.allclose(paper.x_T, strict.x_T)


def test_a_noisy_run_records_the_noise_it_used():
    """One Spend per noisy repeat: T Gaussian steps with multiplier sigma / (2c/n) (replace-one), Theorem 1 named
    with the run's own sigma; its totals are the accountant's on the same noise (the experiments' old
    `accounted_epsilon` at 2c/n and, through `at_sensitivity`, at the proof's c/n)."""
    prob = tiny_problem()
    n, T, sigma = prob.n, 12, [0.3, 0.7]
    run = lin.dp_acc_admm(prob, T=T, eta=prob.default_eta(1.0), sigma=sigma, repeats=2,
                          rngs=repeat_generators(1, 2, "spend"), gradient_bound=1.0,
                          bound_args={"delta": 1e-3, "mu": 0.5})
    assert len(run.spends) == 2
    for record, s in zip(run.spends, sigma):
        assert record.neighbouring == "replace-one" and record.bound == "xu2020.theorem1"
        assert record.event.count == T and record.event.event.noise_multiplier == s / (2.0 / n)
        assert record.bound_args == {"sigma": s, "T": T, "n": n, "delta": 1e-3, "mu": 0.5, "c": 1.0}
        got = totals(record, 1e-3, discretization=1e-4)
        assert got["rdp_eps"] == xu2020.accounted_epsilon(s, T, n, 1e-3, 1.0, 2.0, "rdp")
        assert got["pld_eps"] == xu2020.accounted_epsilon(s, T, n, 1e-3, 1.0, 2.0, "pld", discretization=1e-4)
        assert totals(xu2020.at_sensitivity(record, 1.0), 1e-3, pld=False)["rdp_eps"] == \
            xu2020.accounted_epsilon(s, T, n, 1e-3, 1.0, 1.0, "rdp")
        assert got["paper_eps"] == pytest.approx(xu2020.theorem1_epsilon(s, T, n, 1e-3, 0.5, 1.0))
    # the default gradient bound is the data's own (max row norm: 1 after the unit-norm scaling), no paper bound
    plain = lin.xu_dp_admm(prob, T=T, eta=prob.default_eta(1.0), sigma=0.3, rngs=repeat_generators(1, 1, "spend"))
    c = float(np.sqrt((prob.X ** 2).sum(1).max()))
    assert plain.spends[0].event.event.noise_multiplier == pytest.approx(0.3 / (2 * c / n)) and c <= 1.0 + 1e-12
    assert plain.spends[0].bound is None
    # noise-free runs spend nothing
    assert lin.run(prob, T=3, eta=prob.default_eta(1.0)).spends == []


@pytest.mark.parametrize("accelerated", [False, True])
@pytest.mark.parametrize("u0", ["paper", "zero"])
@pytest.mark.parametrize("sigma", [0.0, 0.05])
def test_run_lanes_equal_one_run_per_step_size(accelerated, u0, sigma):
    """Step sizes as lanes of one run (columns; the rows swept once for all lanes by the compiled lane kernel, u_0
    and each iteration's noise drawn once) give each lane's x_T bit for bit as its own run with a fresh Generator of
    the same seed, on sparse rows (the compiled sweep); on dense rows the lanes' gradients are one BLAS product
    (columns), equal to the one-lane products up to round-off."""
    import scipy.sparse as sp

    from repro_dpadmm.problems.l2_logistic import L2Logistic

    rng = np.random.default_rng(4)
    X = rng.standard_normal((80, 7)) * (rng.random((80, 7)) < 0.4)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.standard_normal(7) > 0, 1.0, -1.0)
    etas = [0.4, 1.0, 4.0, 8.0, 12.0]   # a group of four lanes and one more
    for rows in (sp.csr_matrix(X), X):
        prob = L2Logistic(X=rows, y=y, lam=1e-3)
        lanes = lin.run_lanes(prob, T=9, etas=etas, sigma=sigma, accelerated=accelerated, u0=u0,
                              rng=repeat_generators(2, 1, "lanes")[0])
        assert lanes.shape == (5, 7)
        for lane, eta in enumerate(etas):
            one = lin.run(prob, T=9, eta=eta, sigma=sigma, accelerated=accelerated, u0=u0, repeats=1,
                          rngs=repeat_generators(2, 1, "lanes"))
            if sp.issparse(rows):
                np.testing.assert_array_equal(lanes[lane], one.x_T[0])
            else:
                np.testing.assert_allclose(lanes[lane], one.x_T[0], rtol=1e-12, atol=1e-14)
        assert not np.array_equal(lanes[0], lanes[1])
        if sp.issparse(rows):
            np.testing.assert_array_equal(prob.grad_lanes(lanes), np.stack([prob.grad(x) for x in lanes]))


def test_run_lanes_fail_loudly_on_a_diverging_lane():
    """A lane whose step diverges stops the whole run with DivergedError naming that lane's eta (never a half-run
    result), as its own run would; bad step sizes are refused before any work."""
    from repro_dpadmm.problems.l2_logistic import L2Logistic

    rng = np.random.default_rng(4)
    X = rng.standard_normal((80, 7))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    prob = L2Logistic(X=X, y=np.where(X @ rng.standard_normal(7) > 0, 1.0, -1.0), lam=1e-3)
    eta_bad = 1e5   # the x-step's rho-term grows by a factor of about eta rho per iteration
    with pytest.raises(lin.DivergedError) as exc:
        lin.run(prob, T=500, eta=eta_bad, u0="zero")
    with pytest.raises(lin.DivergedError) as lanes_exc:
        lin.run_lanes(prob, T=500, etas=[0.1, eta_bad], u0="zero")
    assert lanes_exc.value.eta == exc.value.eta == eta_bad
    for etas in ([], [0.1, -1.0], [[0.1]]):
        with pytest.raises(ValueError, match="etas must be"):
            lin.run_lanes(prob, T=3, etas=etas)
