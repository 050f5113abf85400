"""Canaries: worst-case neighbouring records, for any mechanism that reads its data through the same statistic.

* `gradient_canary`: two replace-one neighbours D_0, D_1 for a mechanism that reads its records through a mean
  logistic gradient at a state the adversary picks (HUANG's DP-ADMM and DPSGD steps, XU's gradient step). D_0 and
  D_1 share m - 1 rows and differ in the last record. With two orthonormal directions u, v (from two further rows),
  the records are (a_0, +1) and (a_1, +1), a_{0,1} = -t u +- sqrt(1 - t^2) v (unit norm, not data rows), and the state
  is w = s u (the per-step guarantee holds for every state). Both canaries are misclassified with margin -t s, so
  each per-sample gradient -a sigma(t s) has norm ~ 1 = c_1, and the two differ by 2 sqrt(1 - t^2) sigma(t s) / m in
  the mean gradient: 99.9% of the replace-one bound 2 c_1 / m for t = 0.05, s = 400. (From w = 0 or with a label flip
  the difference would be 1/m, half the bound, and an audit twice as weak.)
* `least_used` / `canary_rows`: the coordinates the clean data uses least, and rows r e_j on them: canaries of one
  transcript that are orthogonal to each other and to the data (the one-run audit's records).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...problems import logistic


@dataclass(frozen=True)
class GradientCanary:
    """Two replace-one neighbours for a mechanism that reads its data through a mean logistic gradient at `state`.

    X[b], y[b]: dataset D_b, the m - 1 common rows then the canary (last row). u, v: the orthonormal directions;
    state = state_norm * u.
    """

    X: tuple
    y: tuple
    state: np.ndarray
    u: np.ndarray
    v: np.ndarray
    offset: float
    state_norm: float

    @property
    def m(self) -> int:
        return self.X[0].shape[0]

    def gradient_gap(self) -> float:
        """||grad f_{D_1}(state) - grad f_{D_0}(state)|| of the mean logistic loss (the library's gradient)."""
        g = [logistic.mean_grad(self.X[b], self.y[b], self.state) for b in (0, 1)]
        return float(np.linalg.norm(g[1] - g[0]))


def gradient_canary(X: np.ndarray, y: np.ndarray, m: int, *, state_norm: float, offset: float,
                    rng: np.random.Generator) -> GradientCanary:
    """m - 1 rows of X (drawn by `rng`; rows of norm <= 1) plus the canary pair described in the module docstring."""
    if int(m) != m or m < 3:
        raise ValueError(f"rows (records per dataset) must be an integer >= 3, got {m!r}")
    if not 0 < offset < 1:
        raise ValueError(f"canary offset t must lie in (0, 1), got {offset!r}")
    if not state_norm > 0:
        raise ValueError(f"state_norm must be > 0, got {state_norm!r}")
    norms = np.linalg.norm(X, axis=1)
    if norms.max() > 1 + 1e-9:
        raise ValueError(f"rows must have norm <= 1 (the sensitivity bounds assume it); max is {norms.max():.4g}")
    idx = rng.choice(len(y), size=m + 1, replace=False)
    common, y_common = X[idx[:m - 1]], np.asarray(y[idx[:m - 1]], float)
    a, b = X[idx[m - 1]], X[idx[m]]                       # two further rows span the canary's plane
    u = a / np.linalg.norm(a)
    v = b - (b @ u) * u
    if np.linalg.norm(v) < 1e-6:
        raise ValueError("the two rows chosen for the canary are parallel; use another seed")
    v = v / np.linalg.norm(v)
    c = np.sqrt(1.0 - offset ** 2)
    canaries = (-offset * u + c * v, -offset * u - c * v)
    Xs = tuple(np.vstack([common, cn[None, :]]) for cn in canaries)
    ys = tuple(np.append(y_common, 1.0) for _ in canaries)
    return GradientCanary(Xs, ys, state_norm * u, u, v, float(offset), float(state_norm))


def least_used(X, k: int) -> np.ndarray:
    """The k coordinates with the smallest column energy sum_i X_ij^2 in the clean data (ties by index)."""
    energy = np.asarray(sp.csr_matrix(X).power(2).sum(axis=0)).ravel()
    if k > energy.size:
        raise ValueError(f"{k} orthogonal canaries need {k} coordinates; the data has {energy.size}")
    return np.sort(np.argsort(energy, kind="stable")[:k])


def canary_rows(coords: np.ndarray, reps: int, d: int, norm: float) -> sp.csr_matrix:
    """reps x len(coords) rows norm * e_j, cycling through coords."""
    cols = np.tile(coords, reps)
    return sp.csr_matrix((np.full(cols.size, float(norm)), (np.arange(cols.size), cols)), shape=(cols.size, d))
