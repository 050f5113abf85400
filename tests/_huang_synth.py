"""Small synthetic star-network problems (HUANG) shared by the consensus, DPSGD and centralised-optimum tests."""

from __future__ import annotations

import numpy as np

from repro_dpadmm.algorithms import consensus as cs


def star_problem(n=4, m=30, d=6, D=1, seed=0, test=60):
    """(A (D, n, m, d), b (D, n, m), StarData): rows of norm <= 1, labels from a random linear model plus noise."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((D, n, m, d))
    A /= np.maximum(1.0, np.linalg.norm(A, axis=-1))[..., None]
    w = rng.standard_normal(d) * 2
    b = np.where(A @ w + 0.5 * rng.standard_normal((D, n, m)) > 0, 1.0, -1.0)
    Xt = rng.standard_normal((D, test, d))
    Xt /= np.maximum(1.0, np.linalg.norm(Xt, axis=-1))[..., None]
    yt = np.where(Xt @ w > 0, 1.0, -1.0)
    return A, b, cs.star_data(A, b, Xt, yt)


def objective_grad(A, b, lam_n, w):
    """grad of sum_i f_i(w) with R = ||w||^2/2, dense, one data draw A (n, m, d)."""
    z = b * (A @ w)
    s = 1.0 / (1.0 + np.exp(z))
    return (-(b * s)[..., None] * A).mean(axis=-2).sum(axis=-2) + A.shape[-3] * lam_n * w
