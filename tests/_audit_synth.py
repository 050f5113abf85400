"""Synthetic rows for the audit tests (shared by tests/mechanisms and tests/experiments/test_beyond_audit_run.py)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def sparse_rows(N: int = 1200, d: int = 12, seed: int = 0):
    """(X sparse (N, d), y): non-negative sparse rows of norm <= 1 whose last three coordinates are barely used (the
    one-run canaries' coordinates), labels from a random linear model."""
    rng = np.random.default_rng(seed)
    X = rng.random((N, d)) * (rng.random((N, d)) < 0.4)
    X[:, -3:] *= 0.05                                 # three barely used coordinates
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ rng.standard_normal(d) > 0, 1.0, -1.0)
    return sp.csr_matrix(X), y
