"""privacy.bounds.zhang2018: ZKL's pure-DP bounds P(t) (ICML Thm 4.1, Allerton Thm IV.1), hand-computed on small
graphs; the noise-matching bisection; the registered paper totals a run's Spend names."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm import graphs
from repro_dpadmm.algorithms import decentralized as dz
from repro_dpadmm.privacy.bounds import zhang2018 as bounds
from repro_dpadmm.privacy.spend import PAPER_BOUNDS, Spend, pure_steps, totals
from repro_dpadmm.solvers import NotConvergedError


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


def test_allerton_P_hand_computed_on_path_graph():
    # path 0-1-2, N = 3, rho = 3 (rho/N = 1), C = 5, B = [10, 20, 10], eta = 1, alpha = 2, 1.4 c1 = 0.35:
    # node 0: (10/10)(0.35/(1 + 2) + 2) = 2.116667; node 1: (10/20)(0.35/(1 + 4) + 2) = 1.035
    P = bounds.allerton_P(5.0, [10, 20, 10], [1, 2, 1], rho=3.0, eta=1.0, alpha=2.0, T=4)
    per = 0.35 / 3 + 2
    assert np.allclose(P, [0, per, per, 2 * per, 2 * per])


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="C <= B_i"):
        bounds.icml_P(100.0, [10, 20], [1, 1], eta=np.ones(2), alpha=1.0)
    with pytest.raises(ValueError, match="neighbour"):
        bounds.allerton_P(1.0, [10, 20], [0, 1], rho=1.0, eta=1.0, alpha=1.0, T=2)


def test_bisection_hits_target_or_reports():
    B, V, T = np.array([9000.0, 9100.0, 9050.0]), np.array([2.0, 1.0, 1.0]), 100
    target = bounds.allerton_P(1000.0, B, V, 1.0, 1.0, 1.0, T)[-1]
    m = bounds.match_alpha(lambda a: bounds.icml_P(1000.0, B, V, np.ones(T), np.full(T, a))[-1], target)
    assert m["reached"] and abs(m["P"] - target) <= 1e-6 * target
    eta = dz.geometric(1.0, 1.05, T)
    m2 = bounds.match_alpha(lambda a: bounds.icml_P(1000.0, B, V, eta, a * dz.geometric(1.0, 1.04, T))[-1], target)
    assert m2["reached"] and abs(m2["P"] - target) <= 1e-6 * target
    low = bounds.match_alpha(lambda a: bounds.icml_P(1000.0, B, V, np.ones(T), np.full(T, a))[-1], 0.5 * m["floor"])
    assert not low["reached"] and low["alpha"] is None and "already" in low["reason"]


def test_bisection_given_too_few_steps_raises():
    with pytest.raises(NotConvergedError, match="bisection"):
        bounds.match_alpha(lambda a: a, 0.3, rtol=1e-9, max_iter=3)


def test_the_paper_totals_are_registered_and_read_from_a_record():
    assert PAPER_BOUNDS["zhang2018.icml_P"] is bounds.icml_total
    assert PAPER_BOUNDS["zhang2018.allerton_P"] is bounds.allerton_total
    args = {"C": 3.0, "B": np.array([10, 4, 30]), "V": np.array([1.0, 2.0, 1.0]), "eta": np.array([1.0, 2.0]),
            "alpha": 2.0}
    spend = Spend(pure_steps([0.88125, 0.440625]), bound="zhang2018.icml_P", bound_args=args)
    assert totals(spend, 1e-5, pld=False)["paper_eps"] == pytest.approx(1.321875, rel=1e-15)
    assert np.array_equal(bounds.P_curve(spend), bounds.icml_P(**args))
    r_args = {"C": 5.0, "B": [10, 20, 10], "V": [1, 2, 1], "rho": 3.0, "eta": 1.0, "alpha": 2.0, "T": 4}
    assert bounds.allerton_total(**r_args) == pytest.approx(2 * (0.35 / 3 + 2), rel=1e-15)
    with pytest.raises(ValueError, match="not a ZKL privacy record"):
        bounds.P_curve(Spend(pure_steps([0.1])))
