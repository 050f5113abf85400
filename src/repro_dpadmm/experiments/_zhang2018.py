"""Shared set-up for the ZKL experiments (ICML 2018 and Allerton 2018): data on a graph, initial points, summaries."""

from __future__ import annotations

import numpy as np

from .. import graphs
from ..algorithms import decentralized as dz
from ..rng import repeat_generators, seed_sequence


def network(X, y, params: dict, seed: int, *labels: str):
    """(NodeData, A) from params `graph`, `split` ('even' / 'uneven'), `min_size` (uneven) and, for smoke runs only,
    `subsample` (use a seeded subset of that many rows)."""
    A = graphs.make_graph(params["graph"])
    if params.get("subsample"):  # smoke runs only: a seeded subset of the rows
        keep = np.random.default_rng(seed_sequence(seed, "subsample")).permutation(len(y))[:int(params["subsample"])]
        X, y = X[keep], y[keep]
    split_rng = np.random.default_rng(seed_sequence(seed, *labels, "split"))
    parts = graphs.split_data(len(y), A.shape[0], split_rng, kind=params.get("split", "even"),
                              min_size=params.get("min_size"))
    return dz.node_data(X, y, parts), A


def initial_points(seed: int, repeats: int, N: int, d: int, scale: float, *labels: str):
    """f_i(0) ~ N(0, scale^2 I) [D], one generator per repeat (shared by every curve of an item)."""
    rngs = repeat_generators(seed, repeats, *labels, "init")
    return np.stack([g.standard_normal((N, d)) * scale for g in rngs])


def noise_generators(seed: int, repeats: int, *labels: str):
    return repeat_generators(seed, repeats, *labels, "noise")


def summary(L: np.ndarray) -> dict:
    """L_mean(t), L_range(t) = max - min over runs (SPEC §1.6), as arrays over t."""
    return {"L_mean": L.mean(axis=0), "L_range": L.max(axis=0) - L.min(axis=0)}


def range_bars(ax, t, mean, rng, color, every: int, label=None, **kw):
    """Mean curve with vertical bars of total height L_range centred at L_mean (SPEC §1.6)."""
    ax.plot(t, mean, color=color, label=label, **kw)
    sel = slice(0, None, every)
    ax.errorbar(t[sel], mean[sel], yerr=rng[sel] / 2.0, fmt="none", ecolor=color, elinewidth=0.9, capsize=2)
