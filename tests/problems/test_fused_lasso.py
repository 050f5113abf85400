"""problems.fused_lasso: the feature graph (graphical lasso), the incidence matrix W, A = [W; I] and the penalty of
XU's graph-guided fused lasso (11); the step-size rules."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.problems import fused_lasso as fl


def test_graph_without_edges_is_an_error():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 4))  # independent features: a strong penalty finds no edge
    with pytest.raises(ValueError, match="no edge"):
        fl.estimate_graph(X, alphas=(0.9,))
    with pytest.raises(ValueError, match="no edges"):
        fl.incidence(np.empty((0, 2)), 4)


def test_estimate_graph_finds_planted_edges():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((2000, 6))
    Z[:, 1] += 2 * Z[:, 0]
    Z[:, 3] += 2 * Z[:, 2]
    g = fl.estimate_graph(Z, min_edges=2, max_edges=2)
    assert {tuple(e) for e in g.edges} == {(0, 1), (2, 3)}
    assert g.seconds > 0


def test_incidence_and_penalty():
    W = fl.incidence(np.array([[0, 2], [1, 2]]), 3)
    np.testing.assert_array_equal(W.toarray(), [[1, 0, -1], [0, 1, -1]])
    A = fl.constraint_matrix(W)
    x = np.array([1.0, -2.0, 0.5])
    prob = fl.FusedLasso(X=np.eye(3), y=np.ones(3), A=A, lam=0.1)
    assert prob.penalty(x) == pytest.approx(0.1 * (0.5 + 2.5 + 3.5))


def test_rows_are_scaled_to_norm_at_most_one_and_bound_the_gradients():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    Xn = fl.normalise_rows(X)
    np.testing.assert_allclose(np.linalg.norm(Xn, axis=1), [1.0, 0.5, 0.0])
    prob, _ = fl.build(X, np.array([1.0, -1.0, 1.0]), 1e-3, graph=fl.Graph(np.array([[0, 1]]), 2, 0.0, 0.0))
    assert prob.gradient_bound == pytest.approx(1.0) and prob.L_f == pytest.approx(0.25)
    rng = np.random.default_rng(0)
    for x in rng.normal(scale=5.0, size=(20, 2)):   # every per-sample gradient lies within c = max_i ||l_i||
        per_sample = -(prob.y * (1 / (1 + np.exp(prob.y * (Xn @ x)))))[:, None] * Xn
        assert np.linalg.norm(per_sample, axis=1).max() <= prob.gradient_bound


def test_step_size_rules():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 4))
    prob, _ = fl.build(X, np.where(X[:, 0] > 0, 1.0, -1.0), 1e-3, graph=fl.Graph(np.array([[0, 1]]), 4, 0.0, 0.0))
    assert fl.resolve_step_size({}, "a9a", prob) == (pytest.approx(1.0 / prob.L_f), "paper")
    eta_c, rule = fl.resolve_step_size({"eta_rule": "conservative", "rho": 2.0}, "a9a", prob)
    assert rule == "conservative" and eta_c == pytest.approx(1.0 / (prob.L_f + 2.0 * prob.norm_AtA))
    assert fl.resolve_step_size({"eta": {"a9a": 0.3}}, "a9a", prob) == (0.3, "config")
    with pytest.raises(ValueError, match="eta_rule"):
        fl.resolve_step_size({"eta_rule": "large"}, "a9a", prob)
    with pytest.raises(ValueError, match="eta"):
        fl.resolve_step_size({"eta": -1.0}, "a9a", prob)
