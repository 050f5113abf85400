"""FDML-style mini-batch SGD over vertically partitioned features (the SGD baseline of Hu et al. §5, docs/choices.md#hu-sgd-baseline).

Hu, Niu, Yang, Zhou, "FDML: A collaborative machine learning framework for distributed features" (KDD'19), with
linear local models: for a mini-batch B, each party m computes its local predictions D_m^i x_m, the server sums them
into the margin, returns the derivative of the loss with respect to that sum, and each party steps its own block:

    x_m <- x_m - lr * ( (1/|B|) sum_{i in B} D_m^{i T} dl_i/d(sum) + 2 (lam/N) x_m ),

i.e. SGD on the same mean-form objective (1/N) sum_i ln(1 + exp(-Y_i D^i x)) + (lam/N) ||x||^2 that ADMM sharing
minimises (lam weighs ||x||^2 next to the summed loss). The parties' block steps together are the full-vector step,
which is how it is computed here (one product per batch, no loop over parties). No noise (docs/choices.md#hu-sgd-baseline).
Runs (repeats, learning rates) are vectorised on a leading axis; each run has its own generator for its random
initialisation ("with random numbers", N(0, init_std^2)) and its shuffles.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ..datasets.partition import vertical
from ..history import History
from ..problems.logistic import loss, sigmoid_neg
from .sharing import check_labels


def fdml_sgd(D, Y, boundaries: Sequence[int], *, lam: float, lr, epochs: int, batch_size: int,
             rngs: Sequence[np.random.Generator], init_std: float = 0.01, D_test=None, Y_test=None) -> History:
    """R = len(rngs) runs of FDML-SGD; `lr` a scalar or one learning rate per run.

    Traces (R, epochs + 1), index 0 at the random initialisation: `objective` (mean-form training objective),
    `test_logloss`. meta: final `x` (R, d), `lr` (R,).
    """
    D = D.toarray() if sp.issparse(D) else np.asarray(D, dtype=float)
    N, d = D.shape
    vertical(d, boundaries)                      # same validation of the feature split as ADMM sharing
    Y = check_labels(Y, N)
    R = len(rngs)
    lr = np.broadcast_to(np.asarray(lr, dtype=float), (R,)).copy()
    if np.any(~np.isfinite(lr)) or np.any(lr <= 0):
        raise ValueError(f"learning rates must be > 0, got {lr}")
    if int(epochs) < 1 or int(batch_size) < 1:
        raise ValueError(f"epochs and batch_size must be >= 1, got {epochs}, {batch_size}")
    if lam < 0 or init_std < 0:
        raise ValueError(f"lam and init_std must be >= 0, got {lam}, {init_std}")
    test = D_test is not None
    if test:
        D_test = D_test.toarray() if sp.issparse(D_test) else np.asarray(D_test, dtype=float)
        Y_test = check_labels(Y_test, D_test.shape[0])

    x = np.stack([g.normal(0.0, init_std, d) for g in rngs])
    tr = {"objective": np.empty((R, epochs + 1))}
    if test:
        tr["test_logloss"] = np.empty((R, epochs + 1))

    def record(e):
        with np.errstate(over="ignore", invalid="ignore"):
            tr["objective"][:, e] = loss(Y * (x @ D.T)).mean(-1) + lam / N * (x ** 2).sum(-1)
            if test:
                tr["test_logloss"][:, e] = loss(Y_test * (x @ D_test.T)).mean(-1)

    record(0)
    reg = 2.0 * lam / N
    for e in range(1, epochs + 1):
        perm = np.stack([g.permutation(N) for g in rngs])             # (R, N): each run its own shuffle
        for start in range(0, N, batch_size):
            idx = perm[:, start:start + batch_size]                    # (R, B)
            A, b = D[idx], Y[idx]                                      # (R, B, d), (R, B)
            with np.errstate(over="ignore", invalid="ignore"):
                u = np.einsum("rbd,rd->rb", A, x)                      # sum over parties of D_m^i x_m
                dl = -b * sigmoid_neg(b * u) / idx.shape[1]            # server: d loss / d(sum)
                grad = np.einsum("rb,rbd->rd", dl, A) + reg * x         # each party: its own block of this
            x = x - lr[:, None] * grad
        record(e)
    return History(traces=tr, meta={"x": x, "lr": lr, "batch_size": int(batch_size), "init_std": float(init_std)})


def select_lr(D, Y, boundaries: Sequence[int], *, lam: float, grid: Sequence[float], batch_size: int,
              make_rng, epochs: int = 1, init_std: float = 0.01) -> tuple[float, np.ndarray]:
    """docs/choices.md#hu-sgd-baseline: the learning rate from `grid` with the best training objective after `epochs` epoch(s).

    `make_rng()` returns a fresh Generator; every candidate gets an identical one (same initialisation and
    shuffles), so only the learning rate differs. Returns (best lr, final objective per candidate).
    """
    grid = [float(v) for v in grid]
    if not grid:
        raise ValueError("the learning-rate grid is empty")
    h = fdml_sgd(D, Y, boundaries, lam=lam, lr=np.array(grid), epochs=epochs, batch_size=batch_size,
                 rngs=[make_rng() for _ in grid], init_std=init_std)
    final = np.nan_to_num(h.final("objective"), nan=np.inf)
    return grid[int(np.argmin(final))], final
