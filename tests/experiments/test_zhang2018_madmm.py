"""experiments.zhang2018_madmm: the ZKL-ICML items run / plot / metrics / table on a small stand-in for Adult; the
equal-noise twin; P(t) and P(T) taken from the runs' records."""

from __future__ import annotations

import numpy as np
import pytest

from repro_dpadmm.experiments import zhang2018_madmm as em
from repro_dpadmm.privacy.bounds import zhang2018 as bounds

from _zkl_synth import adult_like

PRIVATE = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 4, "repeats": 3,
           "theta": 0.5, "curves": {"blue": {"q1": 1.05, "q2": 1.04}, "black": {"q1": 1.0, "q2": 1.04}},
           "newton_tol": 1e-10, "seed": 0}


@pytest.fixture
def small_adult(monkeypatch):
    monkeypatch.setattr(em, "_adult", lambda: adult_like())


def test_equal_noise_twin_reuses_the_noise_draws_of_its_curve():
    X, y = adult_like()
    params = {**PRIVATE, "equal_noise": {"same": {"of": "blue", "q1": 1.05}, "eta_const": {"of": "blue", "q1": 1.0}}}
    c = em.private_comparison(X, y, params, 0, 3.0, "t")["curves"]
    assert np.array_equal(c["same"]["L"], c["blue"]["L"])  # same schedule and same draws: the same runs
    assert not np.allclose(c["eta_const"]["L"], c["black"]["L"])  # black: same schedule, its own draws
    m, rep = em.private_metrics({3.0: {"curves": c, "B": np.full(5, 80), "V": np.ones(5), "N": 5}}, 4)
    assert rep["a3.L_dev_late.blue"].shape == (3,) and m["a3.L_final_mean.blue"] == rep["a3.L_final_mean.blue"].mean()


def test_privacy_comes_from_the_runs_records_and_equals_the_theorem_on_the_schedules():
    X, y = adult_like()
    res = em.private_comparison(X, y, PRIVATE, 0, 3.0, "t")
    B, V, T = res["B"], res["V"], 4
    for name, c in res["curves"].items():
        ref = bounds.icml_P(20.0, B, V, em.dz.geometric(0.5, c["q1"], T), em.dz.geometric(3.0, c["q2"], T))
        assert np.array_equal(c["P"], ref) and c["P_total"] == ref[-1]
    with pytest.raises(ValueError, match="raise theta"):  # Algorithm 1's parameter condition
        em.private_comparison(X, y, {**PRIVATE, "C": 80.0, "theta": 0.01, "rho": 0.01}, 0, 3.0, "t")


def test_private_items_run_plot_and_report(small_adult):
    res = em.run_fig2({**PRIVATE, "alpha1": [3.0, 5.0]})
    figs = em.plot_fig2(res)
    assert list(figs) == ["fig2"] and len(figs["fig2"].axes) == 4
    m = em.metrics_fig2(res)
    assert set(m) == {"metrics", "repeats"} and m["metrics"]["a5.P_final.blue"] == res["alphas"][5.0]["curves"][
        "blue"]["P"][-1]
    assert m["metrics"]["a3.L_final_mean.black"] == pytest.approx(m["repeats"]["a3.L_final_mean.black"].mean())
    table = em.table_fig2(res, m["metrics"])
    assert "| `N` | 5 |" in table and "`a3.P_final.blue`" in table and "newton" not in table
    uneven = em.run_fig4({**PRIVATE, "split": "uneven", "min_size": 60, "alpha1": [3.0]})
    m4 = em.metrics_fig4(uneven)["metrics"]
    assert set(uneven["P_even"]) == {"blue", "black"} and m4["P_final_even.blue"] < m4["a3.P_final.blue"]
    assert list(em.plot_fig4(uneven)) == ["fig4"]


def test_fig1_runs_plots_and_reports(small_adult):
    params = {"graph": {"kind": "five_node"}, "split": "even", "C": 20.0, "rho": 1.0, "iterations": 4, "seed": 0,
              "eta1": [0.55, 0.65, 0.6, 0.55, 0.6], "q": [1.01, 1.03, 1.1, 1.2, 1.02], "theta_fixed": 0.5,
              "theta_random": [0.3, 0.55], "theta_node_offset": 0.05, "eta_b": 0.5, "theta_b": 0.5,
              "q1_list": [1.0, 1.1], "freeze_iterations": 8, "newton_tol": 1e-10}
    res = em.run_fig1(params)
    assert list(em.plot_fig1(res)) == ["fig1"]
    m = em.metrics_fig1(res)["metrics"]
    assert m["a.freeze.T_long"] == 8 and m["a.dist_ratio.fixed"] < 1 and "b.L_final.q1_1.10" in m
    assert em.table_fig1(res, m).count("\n| `") == 1 + sum(k.startswith("a.freeze") for k in m)
