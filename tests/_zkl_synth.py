"""Small synthetic ZKL problems shared by the decentralised-ADMM, bound and experiment tests."""

from __future__ import annotations

import numpy as np

from repro_dpadmm import graphs
from repro_dpadmm.algorithms import decentralized as dz

RING4 = graphs.from_edges(4, [(0, 1), (1, 2), (2, 3), (3, 0)])


def zkl_problem(N=4, per_node=(30, 45, 25, 40), d=5, seed=0):
    """(X, y, NodeData): unit-norm rows, labels from a noisy linear rule, node i holding per_node[i] rows."""
    rng = np.random.default_rng(seed)
    n = sum(per_node[:N])
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.standard_normal(d) * 3
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    parts = np.split(rng.permutation(n), np.cumsum(per_node[:N])[:-1])
    return X, y, dz.node_data(X, y, parts)


def adult_like(n=400, d=6, seed=4):
    """(X, y): n unit-norm rows with linearly separable labels, standing in for Adult in the item tests."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, np.where(X @ rng.standard_normal(d) > 0, 1.0, -1.0)
