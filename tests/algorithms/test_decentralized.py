"""algorithms.decentralized: node data, the damped Newton local solver, conventional ADMM, M-ADMM / PP / DVP and
(private) R-ADMM on small synthetic problems, the network set-up, and the privacy each private run records.

Every inner solver stops on its tolerance or raises NotConvergedError (docs/choices.md#solvers-converge); the local solves are checked
against scipy, the recycled gradient against the direct one, and the recorded Spend against the per-step budgets of
ICML Thm 4.1 / Allerton Thm IV.1 computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from repro_dpadmm import graphs
from repro_dpadmm.algorithms import decentralized as dz
from repro_dpadmm.privacy import accounting
from repro_dpadmm.privacy.bounds import zhang2018 as bounds
from repro_dpadmm.privacy.spend import REPLACE_ONE, pure_epsilons, totals
from repro_dpadmm.rng import repeat_generators
from repro_dpadmm.solvers import NotConvergedError

from _zkl_synth import RING4, adult_like, zkl_problem


# --------------------------------------------------------------------------------------------------- node data
def test_uneven_split_handles_different_node_sizes():
    X, y, _ = zkl_problem(per_node=(3, 80, 10, 7))
    parts = np.split(np.arange(100), [3, 83, 93])
    data = dz.node_data(X, y, parts)
    f = np.random.default_rng(0).standard_normal((2, 4, 5))
    ref = np.array([[np.logaddexp(0, -y[p] * (X[p] @ f[r, k])).mean() for k, p in enumerate(parts)] for r in range(2)])
    assert np.allclose(dz.local_loss(data, f), ref)
    g_ref = np.array([[-(X[p] * (y[p] / (1 + np.exp(y[p] * (X[p] @ f[r, k]))))[:, None]).mean(0)
                       for k, p in enumerate(parts)] for r in range(2)])
    assert np.allclose(dz.local_grad(data, f), g_ref)


# --------------------------------------------------------------------------------------------------- set-up
def test_network_splits_every_row_once_per_item_and_seed():
    X, y = adult_like(n=403)
    data, A = dz.network(X, y, {"kind": "five_node"}, 0, "paper", "item")
    assert np.array_equal(A, graphs.five_node())
    assert sorted(data.B.tolist()) == [80, 80, 81, 81, 81] and data.B.sum() == 403
    again, _ = dz.network(X, y, {"kind": "five_node"}, 0, "paper", "item")
    other, _ = dz.network(X, y, {"kind": "five_node"}, 0, "paper", "other item")
    assert np.array_equal(data.y, again.y) and not np.array_equal(data.y, other.y)  # a split per item label
    small, _ = dz.network(X, y, {"kind": "five_node"}, 0, "paper", "item", subsample=50)
    sub_other, _ = dz.network(X, y, {"kind": "five_node"}, 0, "paper", "other item", subsample=50)
    assert small.B.sum() == 50 and np.array_equal(np.sort(small.y), np.sort(sub_other.y))  # one subset per seed
    uneven, _ = dz.network(X, y, {"kind": "five_node"}, 0, "p", split="uneven", min_size=60)
    assert uneven.B.min() >= 60 and uneven.B.sum() == 403


def test_initial_points_and_noise_generators_are_seeded_per_repeat():
    f0 = dz.initial_points(3, 2, 4, 5, 0.5, "p", "i")
    ref = np.stack([g.standard_normal((4, 5)) for g in repeat_generators(3, 2, "p", "i", "init")]) * 0.5
    assert f0.shape == (2, 4, 5) and np.array_equal(f0, ref)
    assert np.array_equal(dz.initial_points(3, 3, 4, 5, 0.5, "p", "i")[:2], f0)  # repeat r depends only on r
    g = dz.noise_generators(3, 2, "p", "i")
    assert g[0].random() == repeat_generators(3, 2, "p", "i", "noise")[0].random()


# --------------------------------------------------------------------------------------------------- ADMM, M-ADMM
def test_admm_and_madmm_converge_to_centralised_optimum():
    X, y, data = zkl_problem()
    C, rho = 5.0, 1.0
    fc = dz.centralized_optimum(data, C, rho)
    f0 = np.random.default_rng(1).standard_normal((1, 4, 5))
    h = dz.conventional_admm(data, RING4, C=C, rho=rho, eta=0.5, T=300, f0=f0, fc=fc)
    assert h.traces["dist"][0, -1] < 1e-5 * h.traces["dist"][0, 0]
    eta = dz.geometric([0.55, 0.65, 0.6, 0.55], [1.001, 1.002, 1.0, 1.003], 300)
    h2 = dz.m_admm(data, RING4, C=C, rho=rho, eta=eta, theta=np.full(300, 0.5), f0=f0, fc=fc)
    assert h2.traces["dist"][0, -1] < 1e-4 * h2.traces["dist"][0, 0]
    assert h.spends == [] and h2.spends == []  # non-private runs release nothing private
    # the consensus value minimises (1): its gradient vanishes
    f = h2.meta["f_final"][0].mean(0)
    g = C * dz.local_grad(data, np.broadcast_to(f, (1, 4, 5)))[0].sum(0) + rho * f
    assert np.linalg.norm(g) < 1e-3


def test_dual_invariant_holds_for_a_common_theta_and_breaks_for_per_node_thetas():
    """sum_i lambda_i(t) stays 0 when every node uses the same dual step (fixed or time-varying): ICML (14), 1^T (D - A)
    = 0. With node-specific theta_i it leaves 0, and the consensus M-ADMM then settles on is not f_c* of (1), even
    with constant penalties (Lemma 3.1 needs Lambda in the column space of D - A)."""
    X, y, data = zkl_problem()
    C, rho, T = 5.0, 1.0, 400
    fc = dz.centralized_optimum(data, C, rho)
    f0 = np.random.default_rng(1).standard_normal((1, 4, 5))
    eta = np.full((T, 4), 0.6)
    runs = {"fixed": np.full(T, 0.5), "time_varying": 0.3 + 0.25 * np.random.default_rng(2).random(T),
            "per_node": np.broadcast_to([0.5, 0.55, 0.3, 0.45], (T, 4))}
    h = {n: dz.m_admm(data, RING4, C=C, rho=rho, eta=eta, theta=th, f0=f0, fc=fc) for n, th in runs.items()}
    for n in ("fixed", "time_varying"):
        assert h[n].traces["dual_sum"].shape == (1, T + 1) and h[n].traces["dual_sum"].max() < 1e-12
        assert h[n].traces["dist"][0, -1] < 1e-6 * h[n].traces["dist"][0, 0]
    pn = h["per_node"]
    assert pn.traces["dual_sum"][0, -1] > 1e-3
    assert np.isclose(pn.traces["dual_sum"][0, -1], np.linalg.norm(pn.meta["lambda_final"][0].sum(0)))
    # it does converge (to consensus), but away from f_c*: the distance stops falling
    assert pn.traces["dist"][0, -1] > 1e-3 and abs(pn.traces["dist"][0, -1] - pn.traces["dist"][0, T // 2]) < 1e-6
    f = pn.meta["f_final"][0]
    assert np.abs(f - f.mean(0)).max() < 1e-6


def test_runs_record_their_step_times_and_newton_steps():
    X, y, data = zkl_problem()
    f0 = np.zeros((2, 4, 5))
    h = dz.conventional_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, T=6, f0=f0)
    assert h.meta["step_seconds"].shape == (6,) and np.all(h.meta["step_seconds"] > 0)
    assert h.meta["local_solves"] == 6 * 2 * 4 and h.meta["newton_steps_total"] >= h.meta["local_solves"]
    hr = dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=0.2, K=3, f0=f0)
    assert hr.meta["odd_seconds"].shape == hr.meta["even_seconds"].shape == (3,)
    assert hr.meta["local_solves"] == 3 * 2 * 4  # one local solve per node and repeat per odd iteration only
    assert hr.traces["dual_sum"].max() < 1e-12 and hr.traces["dual_sum"].shape == (2, 7)


def test_local_solve_is_exact():
    X, y, data = zkl_problem()
    rng = np.random.default_rng(3)
    f0 = rng.standard_normal((2, 4, 5))
    b = rng.standard_normal((2, 4, 5)) * 5
    kappa = np.array([0.3, 1.0, 2.0, 0.7])
    sol = dz.solve_local(data, f0, kappa, b, 5.0, tol=1e-12)
    g = 5.0 * dz.local_grad(data, sol.f) + kappa[None, :, None] * sol.f + b
    assert np.abs(g).max() < 1e-9 and sol.steps.max() < 50
    assert np.all(np.sqrt((g ** 2).sum(-1)) / kappa <= 1e-12)  # the stopping rule: ||grad|| / kappa <= tol


def test_pp_reduces_to_dual_perturbation_and_is_deterministic():
    X, y, data = zkl_problem()
    f0 = np.random.default_rng(1).standard_normal((3, 4, 5))
    kw = dict(C=5.0, rho=1.0, eta=dz.geometric(0.5, 1.05, 8), theta=np.full(8, 0.5), f0=f0,
              alpha=dz.geometric(3.0, 1.04, 8))
    h1 = dz.m_admm(data, RING4, rngs=repeat_generators(7, 3, "t"), **kw)
    h2 = dz.m_admm(data, RING4, rngs=repeat_generators(7, 3, "t"), **kw)
    h3 = dz.m_admm(data, RING4, rngs=repeat_generators(8, 3, "t"), **kw)
    assert np.array_equal(h1.traces["L"], h2.traces["L"])
    assert not np.allclose(h1.traces["L"], h3.traces["L"])
    assert np.ptp(h1.traces["L"][:, -1]) > 0  # repeats differ (independent noise)


def test_bad_inputs_are_rejected():
    X, y, data = zkl_problem()
    f0 = np.zeros((1, 4, 5))
    disconnected = graphs.from_edges(4, [(0, 1), (2, 3)])
    with pytest.raises(ValueError, match="connected"):
        dz.conventional_admm(data, disconnected, C=5.0, rho=1.0, eta=0.5, T=2, f0=f0)
    with pytest.raises(ValueError, match="C <= B_i"):
        dz.conventional_admm(data, RING4, C=100.0, rho=1.0, eta=0.5, T=2, f0=f0)
    with pytest.raises(ValueError, match="theta"):
        dz.m_admm(data, RING4, C=5.0, rho=1.0, eta=np.full(3, 0.5), theta=np.full(3, 0.6), f0=f0)
    with pytest.raises(ValueError, match="alpha"):
        dz.m_admm(data, RING4, C=5.0, rho=1.0, eta=np.full(3, 0.5), theta=np.full(3, 0.5), f0=f0,
                  alpha=np.zeros(3), rngs=[np.random.default_rng(0)])


# --------------------------------------------------------------------------------------------------- R-ADMM
def test_recycled_gradient_equals_direct_gradient():
    X, y, data = zkl_problem()
    f0 = np.random.default_rng(2).standard_normal((2, 4, 5))
    h = dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=0.2, K=6, f0=f0, tol=1e-13, check_recycled=True)
    assert h.meta["recycled_grad_max_err"] < 1e-8


def test_even_step_vanishes_as_gamma_grows():
    X, y, data = zkl_problem()
    f0 = np.random.default_rng(2).standard_normal((1, 4, 5))
    h = dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=1e13, K=1, f0=f0, tol=1e-12)
    ref = dz.conventional_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, T=1, f0=f0, tol=1e-12)
    assert np.abs(h.meta["f_final"] - ref.meta["f_final"]).max() < 1e-9
    L = h.traces["L"][0]
    assert abs(L[2] - L[1]) < 1e-10


def test_radmm_converges_nonprivate():
    X, y, data = zkl_problem()
    fc = dz.centralized_optimum(data, 5.0, 1.0)
    f0 = np.random.default_rng(2).standard_normal((1, 4, 5))
    h = dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=5.0, K=150, f0=f0, fc=fc)
    assert h.traces["dist"][0, -1] < 1e-4 * h.traces["dist"][0, 0]
    assert h.spends == []


def test_private_radmm_deterministic_per_seed():
    X, y, data = zkl_problem()
    f0 = np.zeros((2, 4, 5))
    kw = dict(C=5.0, rho=1.0, eta=1.0, gamma=0.2, K=3, f0=f0, alpha=2.0)
    a = dz.r_admm(data, RING4, rngs=repeat_generators(3, 2, "r"), **kw)
    b = dz.r_admm(data, RING4, rngs=repeat_generators(3, 2, "r"), **kw)
    assert np.array_equal(a.traces["L"], b.traces["L"])


def test_radmm_rejects_bad_gamma():
    X, y, data = zkl_problem()
    with pytest.raises(ValueError, match="gamma"):
        dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=1.0, gamma=0.0, K=1, f0=np.zeros((1, 4, 5)))


# --------------------------------------------------------------------------------------------------- privacy records
def test_private_madmm_records_the_theorem_4_1_budgets_of_its_worst_node():
    """PP with per-node alpha: node budgets C (1.4 c_1 + alpha_i(t)) / (eta(t) V_i B_i) by hand; the record holds the
    node with the largest total (here node 2: fewest samples), and totals() gives back P(T) of (26)."""
    X, y, data = zkl_problem()  # B = [30, 45, 25, 40], V = 2 on the ring
    T, C = 6, 5.0
    eta, alpha = dz.geometric(0.5, 1.05, T), np.outer(dz.geometric(3.0, 1.04, T), [1.0, 1.0, 1.0, 1.2])
    h = dz.m_admm(data, RING4, C=C, rho=1.0, eta=eta, theta=np.full(T, 0.5), f0=np.zeros((2, 4, 5)), alpha=alpha,
                  rngs=repeat_generators(1, 2, "s"))
    (spend,) = h.spends
    hand = C * (1.4 * 0.25 + alpha) / (eta[:, None] * 2.0 * np.array([30.0, 45.0, 25.0, 40.0]))  # (T, N)
    assert hand.sum(0).argmax() == 2
    assert np.allclose(np.sort(pure_epsilons(spend.event)), np.sort(hand[:, 2]), rtol=1e-12)
    assert spend.neighbouring == REPLACE_ONE and spend.bound == "zhang2018.icml_P"
    out = totals(spend, 1e-5)
    P_old = bounds.icml_P(C, data.B, RING4.sum(1), eta, alpha)[-1]  # what the experiments computed on the side
    assert out["paper_eps"] == P_old and out["basic_eps"] == pytest.approx(P_old, rel=1e-12)
    assert out["pld_eps"] == pytest.approx(accounting.pure_composed_epsilon(hand[:, 2], 1e-5), rel=1e-9)
    dvp = dz.conventional_admm(data, RING4, C=C, rho=1.0, eta=0.5, T=T, f0=np.zeros((2, 4, 5)), alpha=3.0,
                               rngs=repeat_generators(1, 2, "s"))
    assert totals(dvp.spends[0], 1e-5, pld=False)["paper_eps"] == pytest.approx(
        T * C * (1.4 * 0.25 + 3.0) / (0.5 * 2 * 25), rel=1e-12)  # DVP: eta = theta, constant alpha


def test_private_radmm_records_the_theorem_iv_1_budgets_of_its_odd_iterations():
    """Private R-ADMM: K = T/2 releases (even steps are post-processing), each (2C/B_i)(1.4 c_1/(rho/N + 2 eta V_i)
    + alpha); with a growing eta the odd-step penalty eta(2k-1) is the one that counts."""
    X, y, data = zkl_problem()
    K, C, rho = 3, 5.0, 1.0
    h = dz.r_admm(data, RING4, C=C, rho=rho, eta=1.0, gamma=0.2, K=K, f0=np.zeros((2, 4, 5)), alpha=2.0,
                  rngs=repeat_generators(3, 2, "r"))
    (spend,) = h.spends
    per = 2 * C / 25.0 * (1.4 * 0.25 / (rho / 4 + 2 * 1.0 * 2) + 2.0)  # node 2, B = 25
    assert np.allclose(pure_epsilons(spend.event), per, rtol=1e-12) and pure_epsilons(spend.event).size == K
    assert spend.bound == "zhang2018.allerton_P" and spend.neighbouring == REPLACE_ONE
    assert totals(spend, 1e-5, pld=False)["paper_eps"] == bounds.allerton_P(C, data.B, RING4.sum(1), rho, 1.0, 2.0,
                                                                            2 * K)[-1]
    eta_t = 1.01 ** np.arange(1, 2 * K + 1)
    hv = dz.r_admm(data, RING4, C=C, rho=rho, eta=eta_t, gamma=0.2 * eta_t, theta=1.0, K=K, f0=np.zeros((2, 4, 5)),
                   alpha=2.0, rngs=repeat_generators(3, 2, "r"))
    hand = 2 * C / 25.0 * (1.4 * 0.25 / (rho / 4 + 2 * eta_t[0::2] * 2) + 2.0)
    assert np.allclose(np.sort(pure_epsilons(hv.spends[0].event)), np.sort(hand), rtol=1e-12)
    assert np.array_equal(bounds.P_curve(hv.spends[0]),
                          bounds.allerton_P(C, data.B, RING4.sum(1), rho, eta_t[0::2], 2.0, 2 * K))


# --------------------------------------------------------------------------------------------------- solvers raise
def _two_sided():
    """phi(f) = mean of L(f x) and L(-f x) over x in {1, 1/2} + 1e-3 f^2 / 2: minimiser f = 0, and its curvature
    vanishes away from 0, so a full Newton step from |f| >= 3 overshoots further every time."""
    X = np.array([[1.0], [1.0], [0.5], [0.5]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    return dz.node_data(X, y, [np.arange(4)])


@pytest.mark.parametrize("start", [3.0, 5.0])
def test_damped_newton_converges_where_plain_newton_does_not(start):
    data = _two_sided()
    args = (data, np.full((1, 1, 1), start), np.array([1e-3]), np.zeros((1, 1, 1)), 1.0)
    with pytest.raises(NotConvergedError, match="plain Newton"):
        dz.solve_local(*args, tol=1e-10, damped=False)
    sol = dz.solve_local(*args, tol=1e-10)
    assert abs(sol.f[0, 0, 0]) < 1e-10 and sol.damped.sum() >= 1 and sol.residual <= 1e-10


def test_zkl_local_solver_given_too_few_steps_raises():
    X, y, data = zkl_problem()
    rng = np.random.default_rng(3)
    args = (data, rng.standard_normal((2, 4, 5)) * 5, np.array([0.3, 1.0, 2.0, 0.7]), rng.standard_normal((2, 4, 5)),
            5.0)
    with pytest.raises(NotConvergedError) as err:
        dz.solve_local(*args, tol=1e-12, max_steps=1, problem="node problem")
    assert "node problem" in str(err.value) and err.value.iteration == 1 and err.value.residual > 1e-12
    sol = dz.solve_local(*args, tol=1e-12)
    g = 5.0 * dz.local_grad(data, sol.f) + np.array([0.3, 1.0, 2.0, 0.7])[None, :, None] * sol.f + args[3]
    assert np.abs(g).max() < 1e-11 and sol.steps.shape == (2, 4) and sol.steps.max() < 20


def _spread_problems(R=3, seed=5):
    """A batch of local problems whose warm starts lie at very different distances from their minimisers, so they
    converge after different numbers of Newton steps (the active set shrinks step by step)."""
    X, y, data = zkl_problem()
    rng = np.random.default_rng(seed)
    f0 = rng.standard_normal((R, 4, 5)) * rng.choice([0.01, 1.0, 10.0], size=(R, 4, 1))
    return data, f0, np.array([0.3, 1.0, 2.0, 0.7]), rng.standard_normal((R, 4, 5)) * 3, 5.0


def test_local_solve_layouts_give_identical_numbers():
    data, *args = _spread_problems()
    columns = dz.solve_local(data, *args, tol=1e-10, flat_below=0.0)  # column layout throughout
    flat = dz.solve_local(data, *args, tol=1e-10, flat_below=1.0)  # a layout of the unconverged problems throughout
    mixed = dz.solve_local(data, *args, tol=1e-10)
    assert columns.steps.min() < columns.steps.max()  # the active set did shrink
    for sol in (flat, mixed):
        assert np.array_equal(sol.f, columns.f) and np.array_equal(sol.steps, columns.steps)
        assert np.array_equal(sol.damped, columns.damped) and sol.residual == columns.residual


def test_batched_local_solve_equals_every_problem_solved_alone():
    data, f0, kappa, b, C = _spread_problems()
    tol = 1e-10
    sol = dz.solve_local(data, f0, kappa, b, C, tol=tol)
    d = data.dim
    for i in range(data.n_nodes):
        rows = data.node == i
        alone = dz.node_data(data.Xb[rows][:, i * d:(i + 1) * d].toarray(), data.y[rows], [np.arange(rows.sum())])
        for r in range(f0.shape[0]):
            one = dz.solve_local(alone, f0[r:r + 1, i:i + 1], kappa[i:i + 1], b[r:r + 1, i:i + 1], C, tol=tol)
            # both are within tol of the same exact minimiser, so within 2 tol of each other
            assert np.linalg.norm(one.f[0, 0] - sol.f[r, i]) <= 2 * tol
            assert abs(int(one.steps[0, 0]) - int(sol.steps[r, i])) <= 1


def _local_objective(data, f, kappa, b, C):
    """phi(f) of every (repeat, node) local problem, (R, N), by numpy and scipy alone."""
    z = data.y[:, None] * (data.Xb @ f.reshape(f.shape[0], -1).T)
    loss = (data.P @ np.logaddexp(0.0, -z)).T
    return C * loss + 0.5 * kappa * (f ** 2).sum(-1) + (b * f).sum(-1)


def _steps_and_armijo(data, f0, kappa, b, C, scale):
    """(slope, curv, nu, Armijo met) of the steps p = scale H^-1 g of every local problem, by dense algebra."""
    R, N, d = f0.shape
    X = data.Xb
    sg = 1.0 / (1.0 + np.exp(dz._margins(data, f0)))
    wts = data.w[:, None] * sg * (1 - sg)   # (n, R): the Hessian's sample weights
    g = C * dz.local_grad(data, f0) + kappa[None, :, None] * f0 + b
    p, Hp = np.empty_like(f0), np.empty_like(f0)
    for r in range(R):
        for i in range(N):
            Xi = X[data.node == i][:, i * d:(i + 1) * d].toarray()
            H = C * Xi.T @ (wts[data.node == i, r][:, None] * Xi) + kappa[i] * np.eye(d)
            p[r, i] = scale * np.linalg.solve(H, g[r, i])
            Hp[r, i] = H @ p[r, i]
    slope = (g * p).sum(-1)
    zp = data.y[:, None] * (X @ p.reshape(R, -1).T)
    nu = np.stack([np.abs(zp[data.node == i]).max(axis=0) for i in range(N)], axis=1)
    change = _local_objective(data, f0 - p, kappa, b, C) - _local_objective(data, f0, kappa, b, C)
    return slope, (p * Hp).sum(-1), nu, change <= -1e-4 * slope


def test_full_step_certificate_never_certifies_a_step_armijo_would_cut():
    """Wherever full_step_certified says yes, the full step meets Armijo's condition phi(f - p) - phi(f) <= -1e-4
    g^T p, measured directly: Newton steps (scaled by 1e-3 to 5) of spread-out problems, and exact Newton steps of
    the two-sided problem whose curvature vanishes away from its minimiser (from 3 and 5 the full step overshoots:
    only the certificate's cubic term, psi(nu) > 1/2, refuses it). Short steps are certified, so a certificate that
    said yes, or no, to everything fails here."""
    cases = [(*_spread_problems(R=6, seed=2), scale) for scale in (1e-3, 0.1, 0.5, 1.0, 2.0, 5.0)]
    cases += [(_two_sided(), np.full((1, 1, 1), start), np.array([1e-3]), np.zeros((1, 1, 1)), 1.0, 1.0)
              for start in (0.1, 3.0, 5.0)]
    certified = fails = 0
    for case in cases:
        slope, curv, nu, armijo = _steps_and_armijo(*case)
        ok = dz.full_step_certified(slope, curv, nu)
        assert np.all(armijo[ok]), case[-1]
        certified += int(ok.sum())
        fails += int((~armijo).sum())
    assert certified > 0 and fails > 0


def test_certified_full_steps_change_no_number(monkeypatch):
    """The line search's skipped first trials: local solves and a private M-ADMM run with the certificate and with
    every first trial evaluated (certificate off) are equal bit for bit, and the certificate did skip trials."""
    data, f0, kappa, b, C = _spread_problems()
    fired = []
    certify = dz.full_step_certified

    def counting(*args):
        ok = certify(*args)
        fired.append(int(ok.sum()))
        return ok

    monkeypatch.setattr(dz, "full_step_certified", counting)
    cut = (_two_sided(), np.full((1, 1, 1), 3.0), np.array([1e-3]), np.zeros((1, 1, 1)), 1.0)  # damped steps

    def solves():
        return [dz.solve_local(data, f0, kappa, b, C, tol=1e-10, flat_below=fb) for fb in (0.0, 0.3, 1.0)] + [
            dz.solve_local(*cut, tol=1e-10)]

    with_it = solves()
    run = dict(C=5.0, rho=1.0, eta=dz.geometric(0.5, 1.05, 6), theta=np.full(6, 0.5), f0=f0,
               alpha=dz.geometric(3.0, 1.04, 6))
    zdata = zkl_problem()[2]
    madmm = dz.m_admm(zdata, RING4, rngs=repeat_generators(3, 3, "cert"), **run)
    assert sum(fired) > 0
    monkeypatch.setattr(dz, "full_step_certified", lambda slope, *a: np.zeros(slope.shape, dtype=bool))
    without = solves()
    for a, c in zip(with_it, without):
        assert np.array_equal(a.f, c.f) and np.array_equal(a.steps, c.steps) and np.array_equal(a.damped, c.damped)
    assert with_it[-1].damped.sum() > 0   # steps the line search did cut are among them
    plain = dz.m_admm(zdata, RING4, rngs=repeat_generators(3, 3, "cert"), **run)
    assert np.array_equal(madmm.meta["f_final"], plain.meta["f_final"])
    assert np.array_equal(madmm.traces["L"], plain.traces["L"])


def test_local_solve_on_the_unconverged_layout_still_raises_naming_problem_step_and_residual():
    data, *args = _spread_problems()
    with pytest.raises(NotConvergedError) as err:
        dz.solve_local(data, *args, tol=1e-12, max_steps=2, flat_below=1.0, problem="node problem")
    assert "node problem" in str(err.value) and err.value.iteration == 2 and err.value.residual > 1e-12


def test_zkl_runs_raise_instead_of_continuing_from_half_solved_problems():
    X, y, data = zkl_problem()
    f0 = np.random.default_rng(1).standard_normal((1, 4, 5)) * 10
    with pytest.raises(NotConvergedError, match="R-ADMM odd-step local problem"):
        dz.r_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, gamma=0.2, K=2, f0=f0, tol=1e-12, max_steps=1)
    with pytest.raises(NotConvergedError, match="M-ADMM local problem"):
        dz.conventional_admm(data, RING4, C=5.0, rho=1.0, eta=0.5, T=2, f0=f0, tol=1e-12, max_steps=1)
    with pytest.raises(NotConvergedError, match="centralised optimum"):
        dz.centralized_optimum(data, 5.0, 1.0, max_steps=1)


def test_centralized_optimum_is_the_minimiser_of_objective_1():
    X, y, data = zkl_problem()
    fc = dz.centralized_optimum(data, 5.0, 1.0)
    w = data.w  # 1/B_i per sample, in node order

    def obj(f):
        z = data.y * (dz.pooled(data).Xb @ f)
        return 5.0 * (w * np.logaddexp(0, -z)).sum() + 0.5 * f @ f

    ref = scipy.optimize.minimize(obj, np.zeros(5), method="BFGS", options={"gtol": 1e-12}).x
    assert np.abs(fc - ref).max() < 1e-6


def _local_problem_scipy(data, node, f_prev, lam, A, C, rho, eta, eps=None):
    """Allerton (12)/(27) for one node, minimised by scipy's trust-region Newton with exact derivatives."""
    N = A.shape[0]
    sel = np.flatnonzero(data.node == node)
    Xi = (dz.pooled(data).Xb[sel]).toarray()
    yi = data.y[sel]
    nbr = np.flatnonzero(A[node])
    mid = 0.5 * (f_prev[node] + f_prev[nbr])  # (V_i, d)
    lin = 2 * lam[node] + (0 if eps is None else eps[node])

    def fun(f):
        z = yi * (Xi @ f)
        s = 1 / (1 + np.exp(z))
        val = C * np.logaddexp(0, -z).mean() + rho / N * 0.5 * f @ f + lin @ f + eta * ((mid - f) ** 2).sum()
        grad = -C * (Xi * (yi * s)[:, None]).mean(0) + rho / N * f + lin + 2 * eta * (len(nbr) * f - mid.sum(0))
        return val, grad

    def hess(f):
        s = 1 / (1 + np.exp(yi * (Xi @ f)))
        return C * (Xi * (s * (1 - s))[:, None]).T @ Xi / len(yi) + (rho / N + 2 * eta * len(nbr)) * np.eye(Xi.shape[1])

    return scipy.optimize.minimize(fun, f_prev[node], jac=True, hess=hess, method="trust-exact",
                                   options={"gtol": 1e-13}).x


def test_radmm_odd_steps_match_a_direct_scipy_solve_of_each_localzkl_problem():
    X, y, data = zkl_problem()
    C, rho, eta = 5.0, 1.0, 0.5
    A = RING4
    f0 = np.random.default_rng(2).standard_normal((1, 4, 5)) * 3
    f_prev, lam = f0[0], np.zeros((4, 5))
    for K in (1, 2, 3):
        h = dz.r_admm(data, A, C=C, rho=rho, eta=eta, gamma=0.2, K=K, f0=f0, tol=1e-12)
        ref = np.stack([_local_problem_scipy(data, i, f_prev, lam, A, C, rho, eta) for i in range(4)])
        assert np.abs(h.meta["f_odd_final"][0] - ref).max() < 1e-8
        f_prev, lam = h.meta["f_final"][0], h.meta["lambda_final"][0]  # the state the next odd step starts from


def test_private_radmm_noise_follows_alpha():
    """The objective-perturbation noise eps recovered from the first odd step's KKT condition (15)/(49) has mean
    norm d/alpha (Gamma(d, 1/alpha) norms): ten times smaller at alpha = 20 than at alpha = 2."""
    X, y, data = zkl_problem()
    C, rho, eta, R = 5.0, 1.0, 1.0, 200
    f0 = np.zeros((R, 4, 5))
    V = RING4.sum(1)
    mean_norm = {}
    for alpha in (2.0, 20.0):
        h = dz.r_admm(data, RING4, C=C, rho=rho, eta=eta, gamma=0.2, K=1, f0=f0, alpha=alpha,
                      rngs=repeat_generators(5, R, "noise"), tol=1e-12)
        f = h.meta["f_odd_final"]
        # 0 = grad O(f) + eps + 2 lambda(0) + eta sum_j (2 f - f_i(0) - f_j(0)), with lambda(0) = 0 and f(0) = 0
        eps = -(C * dz.local_grad(data, f) + rho / 4 * f + 2 * eta * V[None, :, None] * f)
        mean_norm[alpha] = np.linalg.norm(eps, axis=-1).mean()
        assert mean_norm[alpha] == pytest.approx(5 / alpha, rel=0.06)
    assert mean_norm[2.0] / mean_norm[20.0] == pytest.approx(10, rel=1e-6)  # same draws, scale 1/alpha



@pytest.mark.parametrize("flat_below", [0.0, 0.3, 1.0])
def test_independent_repeats_equal_each_repeat_solved_alone_bit_for_bit(flat_below):
    """With independent repeats each repeat has its own CG forcing term and CG stop and its own preconditioner
    products, so a repeat's solution, Newton steps and damped steps are those of a solve of that repeat alone, bit for
    bit, in either layout."""
    data, f0, kappa, b, C = _spread_problems()
    both = dz.solve_local(data, f0, kappa, b, C, tol=1e-10, flat_below=flat_below, independent_repeats=True)
    alone = [dz.solve_local(data, f0[r:r + 1], kappa, b[r:r + 1], C, tol=1e-10, flat_below=flat_below)
             for r in range(f0.shape[0])]
    for r, one in enumerate(alone):
        assert np.array_equal(both.f[r], one.f[0]) and np.array_equal(both.steps[r], one.steps[0])
        assert np.array_equal(both.damped[r], one.damped[0])
    assert both.residual == max(one.residual for one in alone)


@pytest.mark.parametrize("method", ["m_admm", "r_admm"])
def test_a_private_run_and_its_noise_free_twin_as_lanes_equal_the_two_runs(method):
    """Two lanes of one run with independent repeats, the first drawing its noise from a Generator and the second
    none (generator None), give the private run and the noise-free run of the same settings, bit for bit."""
    X, y, data = zkl_problem()
    f0 = np.zeros((1, 4, 5))
    if method == "m_admm":
        kw = dict(C=5.0, rho=1.0, eta=dz.geometric(0.5, 1.05, 8), theta=np.full(8, 0.5))
        alpha = dz.geometric(3.0, 1.04, 8)
        run = dz.m_admm
    else:
        kw = dict(C=5.0, rho=1.0, eta=1.0, gamma=0.2, K=4)
        alpha = 2.0
        run = dz.r_admm
    private = run(data, RING4, f0=f0, alpha=alpha, rngs=repeat_generators(3, 1, "twin"), **kw).meta["f_final"][0]
    quiet = run(data, RING4, f0=f0, **kw).meta["f_final"][0]
    lanes = run(data, RING4, f0=np.zeros((2, 4, 5)), alpha=alpha, rngs=[repeat_generators(3, 1, "twin")[0], None],
                independent_repeats=True, **kw).meta["f_final"]
    np.testing.assert_array_equal(lanes[0], private)
    np.testing.assert_array_equal(lanes[1], quiet)
    assert not np.allclose(private, quiet)


@pytest.mark.parametrize("flat_below", [0.0, 0.3, 1.0])
def test_lanes_of_their_own_C_and_kappa_equal_each_solved_alone_bit_for_bit(flat_below):
    """Independent repeats with a C and kappa of their own (lanes of runs at different levels): each repeat's
    solution, Newton steps and damped steps are those of a solve of that repeat alone with its own C and kappa, bit
    for bit, in either layout; two lanes with the same (C, kappa) share a preconditioner. Without independent
    repeats such lanes are refused."""
    data, f0, kappa, b, _ = _spread_problems(R=4)
    C = np.array([5.0, 2.0, 5.0, 0.5])
    kap = np.stack([kappa, 2.0 * kappa, kappa, kappa + 1.0])
    both = dz.solve_local(data, f0, kap, b, C, tol=1e-10, flat_below=flat_below, independent_repeats=True)
    for r in range(4):
        one = dz.solve_local(data, f0[r:r + 1], kap[r], b[r:r + 1], float(C[r]), tol=1e-10, flat_below=flat_below)
        assert np.array_equal(both.f[r], one.f[0]) and np.array_equal(both.steps[r], one.steps[0])
        assert np.array_equal(both.damped[r], one.damped[0])
    shared = dz.solve_local(data, f0, kappa, b, 5.0, tol=1e-10, flat_below=flat_below, independent_repeats=True)
    assert not np.array_equal(both.f[1], shared.f[1]) and np.array_equal(both.f[0], shared.f[0])
    with pytest.raises(ValueError, match="independent_repeats"):
        dz.solve_local(data, f0, kap, b, C, tol=1e-10)


@pytest.mark.parametrize("method", ["m_admm", "r_admm"])
def test_runs_at_several_levels_and_their_twins_as_lanes_equal_the_runs(method):
    """Lanes of one run with their own C, rho and alpha (levels of the frontier) and noise-free twins (generator
    None) give every run of those settings alone, bit for bit; the spends are one per lane, each its own run's."""
    X, y, data = zkl_problem()
    Cs, rhos, alphas = [5.0, 5.0, 2.0, 2.0], [1.0, 1.0, 0.4, 0.4], [3.0, 3.0, 0.5, 0.5]
    if method == "m_admm":
        kw = dict(eta=dz.geometric(0.5, 1.05, 8), theta=np.full(8, 0.5))
        shape = dz.geometric(1.0, 1.04, 8)
        run = dz.m_admm
    else:
        kw = dict(eta=1.0, gamma=0.2, K=4)
        shape = 1.0
        run = dz.r_admm
    gens = [repeat_generators(3, 1, "level", str(k))[0] for k in range(2)]
    lanes = run(data, RING4, f0=np.zeros((4, 4, 5)), C=np.array(Cs), rho=np.array(rhos),
                alpha=[a * shape for a in alphas], rngs=[gens[0], None, gens[1], None], independent_repeats=True,
                **kw)
    for lane, (C, rho, a) in enumerate(zip(Cs, rhos, alphas)):
        noise = {"alpha": a * shape, "rngs": repeat_generators(3, 1, "level", str(lane // 2))} if lane % 2 == 0 else {}
        alone = run(data, RING4, f0=np.zeros((1, 4, 5)), C=C, rho=rho, **noise, **kw)
        np.testing.assert_array_equal(lanes.meta["f_final"][lane], alone.meta["f_final"][0])
        if lane % 2 == 0:
            assert lanes.spends[lane].event == alone.spends[0].event
            assert lanes.spends[lane].bound_args["C"] == C
    assert not np.allclose(lanes.meta["f_final"][0], lanes.meta["f_final"][2])
    with pytest.raises(ValueError, match="independent_repeats"):
        run(data, RING4, f0=np.zeros((4, 4, 5)), C=np.array(Cs), rho=np.array(rhos), **kw)
