"""Network topologies for the decentralised (ZKL) runs (docs/choices.md#zkl-networks) and the data split over their nodes.

A graph is its symmetric 0/1 adjacency matrix A (N x N, zero diagonal). ZKL's matrix forms use A, the degree
matrix D = diag(V_i), the Laplacian D - A and the signless Laplacian D + A (ICML eqs. (13)-(16)).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

from .datasets import partition

# docs/choices.md#zkl-networks [D]: the 5-cycle plus the chord (0, 2); degrees [3, 2, 3, 2, 2].
FIVE_NODE_EDGES = ((0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2))


def from_edges(n_nodes: int, edges) -> np.ndarray:
    """Adjacency matrix of an undirected simple graph given by its edge list."""
    A = np.zeros((n_nodes, n_nodes))
    for i, j in edges:
        if i == j or not (0 <= i < n_nodes and 0 <= j < n_nodes):
            raise ValueError(f"edge ({i}, {j}) is not between two distinct nodes of 0..{n_nodes - 1}")
        A[i, j] = A[j, i] = 1.0
    return A


def is_connected(A: np.ndarray) -> bool:
    return connected_components(np.asarray(A) != 0, directed=False)[0] == 1


def check_graph(A) -> np.ndarray:
    """Validate an adjacency matrix: square, symmetric 0/1, zero diagonal, at least 2 nodes, connected."""
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 2:
        raise ValueError(f"adjacency must be a square matrix over at least 2 nodes, got shape {A.shape}")
    if not np.array_equal(A, A.T) or not np.all((A == 0) | (A == 1)) or np.any(np.diag(A)):
        raise ValueError("adjacency must be symmetric with 0/1 entries and a zero diagonal (an undirected simple "
                         "graph)")
    if not is_connected(A):
        n_comp = connected_components(A != 0, directed=False)[0]
        raise ValueError(f"the network must be connected (ZKL §2.1), but this graph has {n_comp} components; "
                         "add edges or resample it (see erdos_renyi)")
    return A


def five_node() -> np.ndarray:
    """The fixed five-node network [D] (docs/choices.md#zkl-networks): ring 0-1-2-3-4-0 plus the chord 0-2."""
    return from_edges(5, FIVE_NODE_EDGES)


def erdos_renyi(n_nodes: int, p: float, rng: np.random.Generator, *, max_tries: int = 10_000) -> np.ndarray:
    """G(N, p), resampled from `rng` until connected (docs/choices.md#zkl-networks: N = 20, p = 0.2; N = 100, p = 0.05)."""
    if n_nodes < 2:
        raise ValueError(f"a network needs at least 2 nodes, got {n_nodes}")
    if not 0.0 < p <= 1.0:
        raise ValueError(f"edge probability p must lie in (0, 1], got {p}")
    iu = np.triu_indices(n_nodes, 1)
    for _ in range(max_tries):
        A = np.zeros((n_nodes, n_nodes))
        A[iu] = rng.random(iu[0].size) < p
        A = A + A.T
        if is_connected(A):
            return A
    raise ValueError(f"no connected G({n_nodes}, {p}) in {max_tries} draws; increase p")


def make_graph(spec: dict, seed: int = 1) -> np.ndarray:
    """A graph from a config mapping: {kind: five_node} or {kind: erdos_renyi, nodes: N, p: p, seed: s}."""
    kind = spec.get("kind")
    if kind == "five_node":
        return five_node()
    if kind == "erdos_renyi":
        rng = np.random.default_rng(int(spec.get("seed", seed)))
        return erdos_renyi(int(spec["nodes"]), float(spec["p"]), rng)
    raise ValueError(f"unknown graph kind {kind!r}; use 'five_node' or 'erdos_renyi'")


def degrees(A) -> np.ndarray:
    """V_i = |neighbours of i|."""
    return np.asarray(A).sum(axis=1)


def laplacian(A) -> np.ndarray:
    """D - A."""
    A = np.asarray(A, dtype=float)
    return np.diag(A.sum(axis=1)) - A


def signless_laplacian(A) -> np.ndarray:
    """D + A."""
    A = np.asarray(A, dtype=float)
    return np.diag(A.sum(axis=1)) + A


def split_data(n_samples: int, n_nodes: int, rng: np.random.Generator, *, kind: str = "even",
               min_size: int | None = None) -> list[np.ndarray]:
    """Sample indices per node: 'even' = shuffle + array_split (docs/choices.md#zkl-networks); 'uneven' = min_size + Multinomial with
    Dirichlet(1) shares (docs/choices.md#zkl-uneven-split)."""
    if kind == "even":
        return partition.near_even(n_samples, n_nodes, rng)
    if kind == "uneven":
        if min_size is None:
            raise ValueError("an uneven split needs min_size (docs/choices.md#zkl-uneven-split uses B_i >= C)")
        return partition.uneven(n_samples, n_nodes, int(min_size), rng)
    raise ValueError(f"unknown split kind {kind!r}; use 'even' or 'uneven'")
