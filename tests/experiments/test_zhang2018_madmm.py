"""ZKL-ICML: graphs, M-ADMM / PP / DVP, the Theorem 4.1 bound, input checks and determinism (small synthetic data)."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm import graphs
from repro_dpadmm.algorithms import decentralized as dz
from repro_dpadmm.privacy.bounds import zhang2018 as bounds


def _problem(N=4, per_node=(30, 45, 25, 40), d=5, seed=0):
    rng = np.random.default_rng(seed)
    n = sum(per_node[:N])
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(d) * 3
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    parts = np.split(rng.permutation(n), np.cumsum(per_node[:N])[:-1])
    return X, y, dz.node_data(X, y, parts)


RING4 = graphs.from_edges(4, [(0, 1), (1, 2), (2, 3), (3, 0)])


def test_five_node_graph_and_er_connected():
    A = graphs.five_node()
    assert graphs.degrees(A).tolist() == [3, 2, 3, 2, 2]
    assert np.allclose(graphs.laplacian(A) @ np.ones(5), 0)
    A100 = graphs.erdos_renyi(100, 0.05, np.random.default_rng(1))
    assert graphs.is_connected(A100) and np.array_equal(A100, A100.T)
    assert np.array_equal(A100, graphs.erdos_renyi(100, 0.05, np.random.default_rng(1)))


def test_icml_P_hand_computed_on_path_graph():
    # path 0-1-2: V = [1, 2, 1]; C = 3, B = [10, 4, 30], c1 = 1/4 so 1.4 c1 = 0.35, alpha = 2
    # t=1, eta=1: node terms 3*2.35/(1*1*10) = 0.705, 3*2.35/(1*2*4) = 0.88125, 3*2.35/(1*1*30) = 0.235
    # t=2, eta=2: halves: 0.3525, 0.440625, 0.1175 -> cumulative max 0.88125 + 0.440625 = 1.321875
    P = bounds.icml_P(3.0, [10, 4, 30], [1, 2, 1], eta=np.array([1.0, 2.0]), alpha=2.0)
    assert np.allclose(P, [0.0, 0.88125, 1.321875])


def test_icml_P_matches_graph_degrees():
    A = graphs.from_edges(3, [(0, 1), (1, 2)])
    P = bounds.icml_P(5.0, [10, 20, 10], graphs.degrees(A), eta=np.ones(3), alpha=np.zeros(3))
    assert np.allclose(P, 5 * 0.35 / 10 * np.arange(4))


def test_admm_and_madmm_converge_to_centralised_optimum():
    X, y, data = _problem()
    C, rho = 5.0, 1.0
    fc = dz.centralized_optimum(data, C, rho)
    f0 = np.random.default_rng(1).standard_normal((1, 4, 5))
    h = dz.conventional_admm(data, RING4, C=C, rho=rho, eta=0.5, T=300, f0=f0, fc=fc)
    assert h.traces["dist"][0, -1] < 1e-5 * h.traces["dist"][0, 0]
    eta = dz.geometric([0.55, 0.65, 0.6, 0.55], [1.001, 1.002, 1.0, 1.003], 300)
    h2 = dz.m_admm(data, RING4, C=C, rho=rho, eta=eta, theta=np.full(300, 0.5), f0=f0, fc=fc)
    assert h2.traces["dist"][0, -1] < 1e-4 * h2.traces["dist"][0, 0]
    # the consensus value minimises (1): its gradient vanishes
    f = h2.meta["f_final"][0].mean(0)
    g = C * dz.local_grad(data, np.broadcast_to(f, (1, 4, 5)))[0].sum(0) + rho * f
    assert np.linalg.norm(g) < 1e-3


def test_local_solve_is_exact():
    X, y, data = _problem()
    rng = np.random.default_rng(3)
    f0 = rng.standard_normal((2, 4, 5))
    b = rng.standard_normal((2, 4, 5)) * 5
    kappa = np.array([0.3, 1.0, 2.0, 0.7])
    sol = dz.solve_local(data, f0, kappa, b, 5.0, tol=1e-12)
    g = 5.0 * dz.local_grad(data, sol.f) + kappa[None, :, None] * sol.f + b
    assert np.abs(g).max() < 1e-9 and sol.steps.max() < 50
    assert np.all(np.sqrt((g ** 2).sum(-1)) / kappa <= 1e-12)  # the stopping rule: ||grad|| / kappa <= tol


def test_pp_reduces_to_dual_perturbation_and_is_deterministic():
    X, y, data = _problem()
    from repro_dpadmm.rng import repeat_generators

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
    X, y, data = _problem()
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
    with pytest.raises(ValueError, match="C <= B_i"):
        bounds.icml_P(100.0, [10, 20], [1, 1], eta=np.ones(2), alpha=1.0)
    with pytest.raises(ValueError):
        graphs.split_data(10, 20, np.random.default_rng(0))


def test_uneven_split_handles_different_node_sizes():
    X, y, _ = _problem(per_node=(3, 80, 10, 7))
    parts = np.split(np.arange(100), [3, 83, 93])
    data = dz.node_data(X, y, parts)
    f = np.random.default_rng(0).standard_normal((2, 4, 5))
    ref = np.array([[np.logaddexp(0, -y[p] * (X[p] @ f[r, k])).mean() for k, p in enumerate(parts)] for r in range(2)])
    assert np.allclose(dz.local_loss(data, f), ref)
    g_ref = np.array([[-(X[p] * (y[p] / (1 + np.exp(y[p] * (X[p] @ f[r, k]))))[:, None]).mean(0)
                       for k, p in enumerate(parts)] for r in range(2)])
    assert np.allclose(dz.local_grad(data, f), g_ref)


def test_equal_noise_twin_reuses_the_noise_draws_of_its_curve():
    from repro_dpadmm.experiments import zhang2018_madmm as em

    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.standard_normal(6) > 0, 1.0, -1.0)
    params = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 4, "repeats": 3,
              "theta": 0.5, "curves": {"blue": {"q1": 1.05, "q2": 1.04}, "black": {"q1": 1.0, "q2": 1.04}},
              "equal_noise": {"same": {"of": "blue", "q1": 1.05}, "eta_const": {"of": "blue", "q1": 1.0}},
              "newton_tol": 1e-10}
    c = em.private_comparison(X, y, params, 0, 3.0, "t")["curves"]
    assert np.array_equal(c["same"]["L"], c["blue"]["L"])  # same schedule and same draws: the same runs
    assert not np.allclose(c["eta_const"]["L"], c["black"]["L"])  # black: same schedule, its own draws
    m, rep = em.private_metrics({3.0: {"curves": c, "B": np.full(5, 80), "V": np.ones(5), "N": 5}}, 4)
    assert rep["a3.L_dev_late.blue"].shape == (3,) and m["a3.L_final_mean.blue"] == rep["a3.L_final_mean.blue"].mean()
