"""graphs: the networks of the decentralised runs (docs/choices.md#zkl-networks) and the data split over their nodes."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm import graphs


def test_five_node_graph_and_er_connected():
    A = graphs.five_node()
    assert graphs.degrees(A).tolist() == [3, 2, 3, 2, 2]
    assert np.allclose(graphs.laplacian(A) @ np.ones(5), 0)
    assert np.array_equal(graphs.signless_laplacian(A), np.diag(graphs.degrees(A)) + A)
    A100 = graphs.erdos_renyi(100, 0.05, np.random.default_rng(1))
    assert graphs.is_connected(A100) and np.array_equal(A100, A100.T)
    assert np.array_equal(A100, graphs.erdos_renyi(100, 0.05, np.random.default_rng(1)))


def test_make_graph_reads_a_config_spec():
    assert np.array_equal(graphs.make_graph({"kind": "five_node"}), graphs.five_node())
    spec = {"kind": "erdos_renyi", "nodes": 20, "p": 0.2, "seed": 1}
    assert np.array_equal(graphs.make_graph(spec), graphs.erdos_renyi(20, 0.2, np.random.default_rng(1)))
    with pytest.raises(ValueError, match="unknown graph kind"):
        graphs.make_graph({"kind": "ring"})


def test_bad_graphs_are_rejected():
    with pytest.raises(ValueError, match="connected"):
        graphs.check_graph(graphs.from_edges(4, [(0, 1), (2, 3)]))
    with pytest.raises(ValueError, match="distinct nodes"):
        graphs.from_edges(3, [(0, 0)])
    with pytest.raises(ValueError, match="symmetric"):
        graphs.check_graph(np.triu(np.ones((3, 3)), 1))


def test_split_data_even_and_uneven():
    rng = np.random.default_rng(0)
    even = graphs.split_data(103, 5, rng)
    assert sorted(len(p) for p in even) == [20, 20, 21, 21, 21]
    assert np.array_equal(np.sort(np.concatenate(even)), np.arange(103))
    uneven = graphs.split_data(1000, 10, np.random.default_rng(1), kind="uneven", min_size=50)
    assert min(len(p) for p in uneven) >= 50 and sum(len(p) for p in uneven) == 1000
    with pytest.raises(ValueError):
        graphs.split_data(10, 20, np.random.default_rng(0))
    with pytest.raises(ValueError, match="min_size"):
        graphs.split_data(100, 5, np.random.default_rng(0), kind="uneven")
